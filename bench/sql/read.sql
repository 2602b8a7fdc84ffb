-- pgbench (bench/postgres.sh): a prepared point read of bench_items, as bench/postgres-bench reads it.
\set id random(1, 100000)
SELECT id, title, price FROM bench_items WHERE id = :id;
