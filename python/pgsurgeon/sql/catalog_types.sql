-- Type facts for printing values: domains are followed to their base type by the caller, arrays to their element,
-- ranges to their subtype, multiranges to their range type, composites (typrelid) to their attributes.
-- printed_as: for a base type made with CREATE TYPE whose output function is a built-in routine (LANGUAGE internal,
-- e.g. 'textout' or 'int4out', as citext and the regression suite's test types do), the built-in base type that has
-- the same routine and the same storage (typlen, typbyval): its values print exactly like that type's. Otherwise the
-- type itself. Built-in types are those below FirstNormalObjectId (16384, access/transam.h).
SELECT t.oid::bigint, t.typname::text, t.typtype::text, t.typlen::int, t.typalign::text, t.typbyval,
       t.typdelim::text, t.typelem::bigint, t.typbasetype::bigint, t.typcategory::text,
       CASE WHEN t.typtype = 'c' THEN t.typrelid ELSE 0 END::bigint AS typrelid,
       coalesce(r.rngsubtype, mr.rngtypid, 0)::bigint AS subtype,
       coalesce(
         (SELECT b.oid
            FROM pg_type b JOIN pg_proc bp ON bp.oid = b.typoutput
           WHERE t.typtype = 'b' AND t.oid >= 16384 AND t.typcategory <> 'A'
             AND p.prolang = (SELECT l.oid FROM pg_language l WHERE l.lanname = 'internal')
             AND b.oid < 16384 AND b.typtype = 'b' AND b.typcategory <> 'A'
             AND bp.prolang = p.prolang AND bp.prosrc = p.prosrc
             AND b.typlen = t.typlen AND b.typbyval = t.typbyval
           ORDER BY b.oid LIMIT 1),
         t.oid)::bigint AS printed_as
FROM pg_type t
LEFT JOIN pg_proc p ON p.oid = t.typoutput
LEFT JOIN pg_range r ON r.rngtypid = t.oid
LEFT JOIN pg_range mr ON mr.rngmultitypid = t.oid
WHERE t.oid = ANY(%(oids)s::oid[])
