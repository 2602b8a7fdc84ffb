-- pgbench (bench/postgres.sh): a single-row insert, as bench/postgres-bench inserts it.
\set worker random(0, 15)
INSERT INTO bench_writes (worker, title) VALUES (:worker, 'favorite');
