-- bench/postgres.sh's tables: 100 000 items for the point read (read.sql), an empty table for the inserts (insert.sql).
CREATE TABLE bench_items (id int PRIMARY KEY, title text NOT NULL, price numeric(8,2));
INSERT INTO bench_items SELECT i, 'Item ' || i, (i % 500) / 3.0 FROM generate_series(1, 100000) i;
CREATE TABLE bench_writes (id bigserial PRIMARY KEY, worker int NOT NULL, title text NOT NULL,
                           created_at timestamptz NOT NULL DEFAULT now());
VACUUM ANALYZE;
