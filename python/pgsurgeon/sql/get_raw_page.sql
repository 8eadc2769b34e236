-- One page through the buffer manager; fails for pages the server considers invalid.
SELECT get_raw_page(%(relname)s, %(fork)s, %(block)s)
