import Foundation

/// A throwaway PostgreSQL 15 cluster of our own: `initdb` in a temporary directory, a free loopback port, fsync off,
/// TLS on (a self-signed certificate) for the tests that ask for it, owned by the `postgres` user when the tests run
/// as root (PostgreSQL refuses to run as root).
///
/// It can be stopped and started again on the same port, which is how tests prove that services ride out a database
/// restart. A watchdog process stops it and deletes its directory once the test process has exited, even after a
/// crash.
public struct TestCluster: Sendable {
    /// Superuser connection string (database `postgres`).
    public let connectionString: String
    public let port: Int
    let root: URL
    let asRoot: Bool

    static let binaries = URL(fileURLWithPath: "/usr/lib/postgresql/15/bin")

    var data: URL { root.appendingPathComponent("data") }

    /// Creates and starts a new cluster.
    public static func create() throws -> TestCluster {
        let fileManager = FileManager.default
        guard fileManager.isExecutableFile(atPath: binaries.appendingPathComponent("initdb").path) else {
            throw TestSupportError("PostgreSQL 15 is not installed (no \(binaries.path)/initdb); run scripts/test, "
                + "which installs it, or set DATABASE_URL")
        }
        let root = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("favoriteme-pg-\(getpid())-\(UUID().uuidString.prefix(8))")
        try fileManager.createDirectory(at: root, withIntermediateDirectories: true)
        let asRoot = getuid() == 0
        if asRoot { try run("/bin/chown", ["postgres:postgres", root.path]) }
        let port = try freeLoopbackPort()
        let cluster = TestCluster(
            connectionString: "host=127.0.0.1 port=\(port) user=postgres dbname=postgres sslmode=disable",
            port: port, root: root, asRoot: asRoot
        )
        try cluster.pgTool("initdb", [
            "-D", cluster.data.path, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync",
        ])
        try cluster.makeServerCertificate()
        try cluster.startWatchdog()
        try cluster.start()
        return cluster
    }

    /// Starts the server (again) and waits until it accepts connections.
    public func start() throws {
        let settings = [
            "-p \(port)", "-k \(root.path)", "-c listen_addresses=127.0.0.1", "-c fsync=off",
            "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=400",
            "-c shared_buffers=64MB", "-c ssl=on",
            // Counts each statement the server runs: how tests check the statements a write costs.
            "-c shared_preload_libraries=pg_stat_statements",
        ].joined(separator: " ")
        try pgTool("pg_ctl", [
            "-D", data.path, "-l", root.appendingPathComponent("server.log").path, "-w", "-t", "60",
            "-o", settings, "start",
        ])
    }

    /// Stops the server: `fast` ends sessions and shuts down cleanly, `immediate` is a crash.
    public func stop(mode: String = "fast") throws {
        try pgTool("pg_ctl", ["-D", data.path, "-m", mode, "-w", "stop"])
    }

    /// Stops the cluster once this process is gone and deletes its directory. `setsid -f` detaches the watchdog
    /// (a new session, so a Ctrl-C of the tests does not kill it first) and returns at once.
    func startWatchdog() throws {
        let stop = (asRoot ? "runuser -u postgres -- " : "")
            + "'\(Self.binaries.path)/pg_ctl' -D '\(data.path)' -m immediate stop"
        let script = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; \(stop) >/dev/null 2>&1; "
            + "rm -rf '\(root.path)'"
        _ = try runProgram("/usr/bin/setsid", ["-f", "/bin/sh", "-c", script])
    }

    /// A self-signed certificate in the data directory, so that tests can reach the server over TLS as well
    /// (`sslmode=require`); ``connectionString`` stays plain.
    func makeServerCertificate() throws {
        let key = data.appendingPathComponent("server.key").path
        try SelfSignedCertificate.make(key: key, certificate: data.appendingPathComponent("server.crt").path,
                                       run: asOwner)
        try asOwner("/bin/chmod", ["600", key])  // PostgreSQL refuses a key that others can read
    }

    func pgTool(_ name: String, _ arguments: [String]) throws {
        try asOwner(Self.binaries.appendingPathComponent(name).path, arguments)
    }

    /// Runs a program as the cluster's owner.
    func asOwner(_ executable: String, _ arguments: [String]) throws {
        if asRoot {
            try Self.run("/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments)
        } else {
            try Self.run(executable, arguments)
        }
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        _ = try runProgram(executable, arguments)
    }
}
