"""Renderers: the same data as text (rich), JSON, and later Markdown/HTML."""
