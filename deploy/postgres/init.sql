-- FavoriteMe Cloud: database, roles and schemas for docker-compose.yml.
--
-- The official postgres image runs this file with psql (as the superuser, once, on an empty data volume) from
-- /docker-entrypoint-initdb.d/. It does what scripts/stack's bootstrap does for the native stack: every statement is
-- safe to repeat, so it can also be re-run by hand on an existing volume, e.g. after changing a password:
--
--   docker compose exec postgres psql -v ON_ERROR_STOP=1 -U postgres -d postgres -f /docker-entrypoint-initdb.d/init.sql
--
-- Passwords come from the postgres container's environment (same variable names as in the native stack's
-- .local/stack.env), with development defaults when a variable is unset or empty. They are also embedded in the
-- services' DATABASE_URL, so keep them URL-safe (letters, digits, '-', '.', '_', '~').
--   AUTH_SERVICE_DB_PASSWORD       role auth_service      owns schema auth
--   CATALOG_PROXY_DB_PASSWORD      role catalog_proxy     owns schema catalog
--   FAVORITES_SERVICE_DB_PASSWORD  role favorites_service owns schema favorites
-- psql's \getenv needs psql 15 or newer (the postgres:15 image has it).

\set ON_ERROR_STOP on
SET client_min_messages = warning; -- no 'already exists, skipping' notices on re-runs

\getenv auth_service_pw AUTH_SERVICE_DB_PASSWORD
\getenv catalog_proxy_pw CATALOG_PROXY_DB_PASSWORD
\getenv favorites_service_pw FAVORITES_SERVICE_DB_PASSWORD

-- \getenv leaves a variable unset when the environment variable is missing; an empty value counts as missing too.
\if :{?auth_service_pw}
\else
\set auth_service_pw ''
\endif
\if :{?catalog_proxy_pw}
\else
\set catalog_proxy_pw ''
\endif
\if :{?favorites_service_pw}
\else
\set favorites_service_pw ''
\endif
SELECT :'auth_service_pw' = '' AS auth_pw_missing,
       :'catalog_proxy_pw' = '' AS catalog_pw_missing,
       :'favorites_service_pw' = '' AS favorites_pw_missing \gset
\if :auth_pw_missing
\echo 'init.sql: AUTH_SERVICE_DB_PASSWORD is unset or empty; using the development default'
\set auth_service_pw 'auth-service-dev'
\endif
\if :catalog_pw_missing
\echo 'init.sql: CATALOG_PROXY_DB_PASSWORD is unset or empty; using the development default'
\set catalog_proxy_pw 'catalog-proxy-dev'
\endif
\if :favorites_pw_missing
\echo 'init.sql: FAVORITES_SERVICE_DB_PASSWORD is unset or empty; using the development default'
\set favorites_service_pw 'favorites-service-dev'
\endif

-- ---------------------------------------------------------------------------------------------------------------------
-- Database and roles (cluster-wide).

SELECT 'CREATE DATABASE favoriteme' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'favoriteme') \gexec

SELECT format('CREATE ROLE %I LOGIN', 'auth_service')
    WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'auth_service') \gexec
SELECT format('CREATE ROLE %I LOGIN', 'catalog_proxy')
    WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'catalog_proxy') \gexec
SELECT format('CREATE ROLE %I LOGIN', 'favorites_service')
    WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'favorites_service') \gexec

ALTER ROLE auth_service WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'auth_service_pw';
ALTER ROLE catalog_proxy WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'catalog_proxy_pw';
ALTER ROLE favorites_service WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    PASSWORD :'favorites_service_pw';

-- Only our three roles may connect, and CONNECT is all they get on the database (no CREATE, no TEMP).
REVOKE ALL ON DATABASE favoriteme FROM PUBLIC;
REVOKE ALL ON DATABASE favoriteme FROM auth_service, catalog_proxy, favorites_service;
GRANT CONNECT ON DATABASE favoriteme TO auth_service, catalog_proxy, favorites_service;

-- ---------------------------------------------------------------------------------------------------------------------
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
