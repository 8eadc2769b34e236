-- The schema an extension is installed in (no row: not installed); its functions are called schema-qualified.
SELECT n.nspname::text FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = %(name)s
