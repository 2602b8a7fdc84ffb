// The services import one module, `Postgres`, and see the whole small API: the pool, its sessions and transactions,
// statements and their values, the listener and migrations. The layers below stay separate targets, so none of them
// can reach up into the pool.
@_exported import PostgresSession
@_exported import PostgresValues
