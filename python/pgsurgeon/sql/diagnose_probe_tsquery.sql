-- A tsvector key as the tsquery its own document matches: the OR of its lexemes, each quoted as tsquery input
-- quotes them (a quote or a backslash doubled). NULL for an empty document.
(SELECT pg_catalog.string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | ')::pg_catalog.tsquery
 FROM pg_catalog.unnest(pg_catalog.tsvector_to_array({key})) l)
