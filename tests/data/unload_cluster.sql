-- The round-trip cluster of tests/test_unload.py, run in the database "shop" (the test creates "shop" and "hr"
-- and runs hr's part below with \connect). Types, schemas, partitions, inheritance, TOAST, dropped and added columns.
CREATE SCHEMA sales;
CREATE SCHEMA "Mixed Case";
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE sales.address AS (street text, zip int4, geo point);
CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
CREATE DOMAIN sales.label AS text NOT NULL;

CREATE TABLE sales.orders (
    id serial PRIMARY KEY,
    customer text NOT NULL,
    gone int4,
    mood mood DEFAULT 'ok',
    addr sales.address,
    amount numeric(10, 2) DEFAULT 0,
    tags text[],
    big bytea,
    note varchar(50) DEFAULT 'none',
    qty posint,
    at timestamptz DEFAULT '2024-01-02 03:04:05+00',
    tag sales.label DEFAULT 'x'
);
INSERT INTO sales.orders (customer, gone, mood, addr, amount, tags, big, note, qty, at)
SELECT 'customer ' || g, g, (ARRAY['sad', 'ok', 'happy'])[1 + g % 3]::mood,
       ROW('street ' || g, 10000 + g, point(g, -g))::sales.address, g * 1.25, ARRAY['t' || g, NULL, 'a"b,c'],
       CASE WHEN g % 50 = 0 THEN decode(repeat(md5(g::text), 300), 'hex') END,
       CASE WHEN g % 7 = 0 THEN NULL ELSE E'tab\there\nnewline \\ back' END, 1 + g % 9,
       '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 hour'
FROM generate_series(1, 3000) g;
ALTER TABLE sales.orders DROP COLUMN gone;
ALTER TABLE sales.orders ADD COLUMN added int4 DEFAULT 42;
ALTER TABLE sales.orders ADD COLUMN added_text text DEFAULT 'later';
INSERT INTO sales.orders (customer, added, added_text) SELECT 'late ' || g, g, NULL FROM generate_series(1, 100) g;
DELETE FROM sales.orders WHERE id % 11 = 0;
UPDATE sales.orders SET amount = amount + 1 WHERE id % 13 = 0;

CREATE INDEX orders_customer_idx ON sales.orders (customer DESC);
ALTER TABLE sales.orders ADD CONSTRAINT orders_customer_key UNIQUE (customer);
CREATE TABLE sales.lines (order_id int REFERENCES sales.orders (id) ON DELETE CASCADE, qty int);
INSERT INTO sales.lines SELECT 1 + g % 10, g FROM generate_series(1, 50) g;

CREATE TABLE sales.events (id int4 NOT NULL, day date NOT NULL, kind text, payload jsonb) PARTITION BY RANGE (day);
CREATE TABLE sales.events_2023 PARTITION OF sales.events FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
CREATE TABLE sales.events_2024 PARTITION OF sales.events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
CREATE TABLE sales.events_other PARTITION OF sales.events DEFAULT;
CREATE INDEX events_day_idx ON sales.events (day);
INSERT INTO sales.events
SELECT g, date '2023-06-01' + g, CASE g % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' END, jsonb_build_object('g', g, 'l', ARRAY[g, g + 1])
FROM generate_series(1, 1000) g;

CREATE TABLE sales.regions (code text, n int4) PARTITION BY LIST (code);
CREATE TABLE sales.regions_eu PARTITION OF sales.regions FOR VALUES IN ('de', 'fr', 'it''s');
CREATE TABLE sales.regions_us PARTITION OF sales.regions FOR VALUES IN ('us');
INSERT INTO sales.regions VALUES ('de', 1), ('fr', 2), ('it''s', 3), ('us', 4);

CREATE TABLE vehicles (id int4 PRIMARY KEY, name text);
CREATE TABLE cars (doors int2) INHERITS (vehicles);
ALTER TABLE vehicles ADD COLUMN color text;
INSERT INTO vehicles VALUES (1, 'bike', 'red');
INSERT INTO cars VALUES (2, 'sedan', 4, 'blue'), (3, 'coupe', 2, NULL);

CREATE TABLE "Mixed Case"."Odd Table" ("Id" int8, "a b" text, u uuid, ip inet, span interval, f float8, ok bool);
INSERT INTO "Mixed Case"."Odd Table"
SELECT g, 'row ' || g, md5(g::text)::uuid, ('10.0.' || (g % 256) || '.1')::inet, g * interval '1 minute', g / 3.0,
       g % 2 = 0
FROM generate_series(1, 500) g;

CREATE TABLE empty_one (a int4);
CREATE UNLOGGED TABLE scratch (a int4);
INSERT INTO scratch VALUES (1);
