import Foundation
import Logging
import Postgres
import TestSupport

/// Processes of the running stack, through `scripts/stack` (the same settings `scripts/test` used to start it).
extension StackUnderTest {
    /// Runs `scripts/stack` with `arguments` and returns its output. `up` starts whatever is not running and waits
    /// until every service is ready. runProgram blocks until the script exits: on a dispatch thread, not the
    /// cooperative pool.
    @discardableResult
    func stack(_ arguments: String...) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try runProgram(stackCommand, arguments) })
            }
        }
    }

    /// The pid `scripts/stack status` shows for `name` (`postgres`, `gateway`, `favorites-service-1`, …).
    func pid(of name: String) async throws -> pid_t {
        let status = try await stack("status")
        for line in status.split(separator: "\n") {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            if columns.count >= 3, columns[0] == name, columns[1] == "running", let pid = pid_t(columns[2]) {
                return pid
            }
        }
        throw StackError("\(name) is not running:\n\(status)")
    }

    /// The replicas of every service (`auth-service-1`, …), as `scripts/stack status` lists them.
    func replicas() async throws -> [String] {
        let services = ["auth-service", "catalog-proxy", "favorites-service"]
        return try await stack("status").split(separator: "\n").compactMap { line in
            let name = String(line.prefix { $0 != " " })
            guard let dash = name.lastIndex(of: "-"), Int(name[name.index(after: dash)...]) != nil,
                  services.contains(String(name[..<dash])) else { return nil }
            return name
        }
    }

    /// Sends `signal` to `name` and waits until the process is gone.
    func stop(_ name: String, with signal: Int32) async throws {
        let pid = try await pid(of: name)
        guard kill(pid, signal) == 0 else { throw StackError("cannot signal \(name) (pid \(pid))") }
        try await waitForExit(of: pid, name: name)
    }

    /// PostgreSQL as a machine crash would leave it: the postmaster and every backend killed at once (SIGKILL).
    func crashDatabase() async throws {
        let postmaster = try await pid(of: "postgres")
        let backends = Self.children(of: postmaster)
        for pid in [postmaster] + backends { kill(pid, SIGKILL) }
        for pid in [postmaster] + backends { try await waitForExit(of: pid, name: "postgres (pid \(pid))") }
    }

    func waitForExit(of pid: pid_t, name: String) async throws {
        for _ in 0..<300 {
            // Signal 0 only checks that the process exists; a zombie (not reaped yet) counts as gone.
            if kill(pid, 0) != 0 || Self.isZombie(pid) { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw StackError("\(name) (pid \(pid)) did not exit within 30 s")
    }

    static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(pid_t.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ", options: .backwards) else { return false }
            let fields = stat[afterName.upperBound...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == parent
        }
    }

    static func isZombie(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ", options: .backwards) else { return false }
        return stat[afterName.upperBound...].first == "Z"
    }

    /// A one-connection pool on favorites-service's own database role, to check what its tables hold.
    func withFavoritesDatabase<Value: Sendable>(_ body: (DatabasePool) async throws -> Value) async throws -> Value {
        let pool = DatabasePool(
            connection: ConnectionConfiguration(connectionString: favoritesDatabaseURL, applicationName: "e2e-tests"),
            pool: PoolConfiguration(size: 1), logger: Logger(label: "e2e")
        )
        return try await pool.closing(after: body)
    }
}
