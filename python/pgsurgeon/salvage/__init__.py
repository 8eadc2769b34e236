"""Saving every readable row of a damaged table: TID-range chunks through SQL, bisection down to single tuples,
carving from the raw pages, and a report of what was saved, carved and lost (``pgsurgeon salvage``); one pg_dump
per table (``pgsurgeon dump-tables``)."""
