-- FavoriteMe Cloud's one database bootstrap: database favoriteme, one login role and one schema per service, and the
-- grants. Every statement is safe to repeat. Run it with psql as a superuser, connected to any database:
--
--   psql -X -v ON_ERROR_STOP=1 -U postgres -d postgres -f deploy/postgres/init.sql \
--        -v auth_service_password=… -v catalog_proxy_password=… -v favorites_service_password=…
--
-- Each role's password is that psql variable or, when it is not set, the environment variable of the same meaning
-- (AUTH_SERVICE_DB_PASSWORD, CATALOG_PROXY_DB_PASSWORD, FAVORITES_SERVICE_DB_PASSWORD: the names of the native stack's
-- .local/stack.env and of docker-compose.yml). Its users:
--   scripts/stack        at every `up`, with the passwords of stack.env in the environment
--   docker-compose.yml   the postgres image runs it from /docker-entrypoint-initdb.d/ once, on an empty volume (to
--                        apply a changed password later: docker compose exec postgres psql -X -v ON_ERROR_STOP=1
--                        -U postgres -d postgres -f /docker-entrypoint-initdb.d/init.sql)
--   tests and benchmarks a throwaway cluster, with -v
-- The passwords also go into the services' DATABASE_URL, so keep them URL-safe (letters, digits, '-', '.', '_', '~').
-- \getenv needs psql 15 or newer.

\set ON_ERROR_STOP on
SET client_min_messages = warning; -- no 'already exists, skipping' notices on re-runs

\if :{?auth_service_password} \else \getenv auth_service_password AUTH_SERVICE_DB_PASSWORD \endif
\if :{?catalog_proxy_password} \else \getenv catalog_proxy_password CATALOG_PROXY_DB_PASSWORD \endif
\if :{?favorites_service_password} \else \getenv favorites_service_password FAVORITES_SERVICE_DB_PASSWORD \endif
-- A password given neither way leaves its variable unset, and its ALTER ROLE below fails (a syntax error at ':').

-- Database and roles (cluster-wide).
SELECT 'CREATE DATABASE favoriteme' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'favoriteme') \gexec

SELECT format('CREATE ROLE %I LOGIN', name) FROM unnest(ARRAY['auth_service', 'catalog_proxy', 'favorites_service']) name
    WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) \gexec

ALTER ROLE auth_service WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'auth_service_password';
ALTER ROLE catalog_proxy WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'catalog_proxy_password';
ALTER ROLE favorites_service WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'favorites_service_password';

-- Only our three roles may connect, and CONNECT is all they get on the database (no CREATE, no TEMP).
REVOKE ALL ON DATABASE favoriteme FROM PUBLIC;
REVOKE ALL ON DATABASE favoriteme FROM auth_service, catalog_proxy, favorites_service;
GRANT CONNECT ON DATABASE favoriteme TO auth_service, catalog_proxy, favorites_service;

-- Schemas (inside favoriteme): one per service, owned by its role, so each service migrates only its own tables.
\connect favoriteme
SET client_min_messages = warning;

REVOKE CREATE ON SCHEMA public FROM PUBLIC;

-- ALTER as well: a schema created earlier by someone else still ends up owned by its service.
CREATE SCHEMA IF NOT EXISTS auth AUTHORIZATION auth_service;
ALTER SCHEMA auth OWNER TO auth_service;
CREATE SCHEMA IF NOT EXISTS catalog AUTHORIZATION catalog_proxy;
ALTER SCHEMA catalog OWNER TO catalog_proxy;
CREATE SCHEMA IF NOT EXISTS favorites AUTHORIZATION favorites_service;
ALTER SCHEMA favorites OWNER TO favorites_service;
