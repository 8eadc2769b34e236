-- The second database of tests/test_unload.py's round trip.
CREATE TYPE level AS ENUM ('junior', 'senior');
CREATE TABLE staff (id int4 PRIMARY KEY, name text NOT NULL, lvl level, salary numeric, hired date DEFAULT '2020-01-01');
INSERT INTO staff SELECT g, 'person ' || g, CASE WHEN g % 2 = 0 THEN 'senior' ELSE 'junior' END::level, g * 1000.5,
       date '2020-01-01' + g FROM generate_series(1, 200) g;
