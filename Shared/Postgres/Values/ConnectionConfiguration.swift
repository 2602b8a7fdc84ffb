import CLibpq
import Foundation

/// How to open a session: a libpq connection string plus the session settings every connection of ours runs with.
///
/// The connection string is handed to libpq itself, so both forms work (`postgresql://user@host:5432/db?sslmode=…`
/// and `host=… dbname=…`), including multi-host failover (`host=a,b target_session_attrs=read-write`), TLS modes, and
/// the `PG*` environment variables and `~/.pgpass` for whatever the string leaves out.
public struct ConnectionConfiguration: Sendable {
    /// A libpq connection string (URI or key/value form). Holds credentials: never log it.
    public var connectionString: String
    /// Shown in `pg_stat_activity`; used only when the connection string sets none.
    public var applicationName: String
    /// The schema unqualified names resolve in (`search_path`); `nil` keeps the role's default.
    public var searchPath: String?
    /// Server-side bound on every statement (`statement_timeout`); the backstop for cancellations that arrive late.
    public var statementTimeout: Duration
    /// A session idle inside a transaction for longer than this is ended by the server, so no forgotten transaction
    /// can hold locks or stall the projections.
    public var idleInTransactionTimeout: Duration
    /// Bound on connecting, per host; used only when the connection string sets none.
    public var connectTimeoutSeconds: Int

    public init(
        connectionString: String,
        applicationName: String,
        searchPath: String? = nil,
        statementTimeout: Duration = .seconds(10),
        idleInTransactionTimeout: Duration = .seconds(30),
        connectTimeoutSeconds: Int = 5
    ) {
        self.connectionString = connectionString
        self.applicationName = applicationName
        self.searchPath = searchPath
        self.statementTimeout = statementTimeout
        self.idleInTransactionTimeout = idleInTransactionTimeout
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }

    /// The settings every session gets: UTC ISO timestamps and exact floats (what our decoders expect), no NOTICE
    /// noise on stderr, and the two timeouts.
    var sessionOptions: String {
        var options = [
            "-c TimeZone=UTC", "-c DateStyle=ISO", "-c extra_float_digits=3", "-c client_min_messages=warning",
            "-c statement_timeout=\(Self.milliseconds(statementTimeout))",
            "-c idle_in_transaction_session_timeout=\(Self.milliseconds(idleInTransactionTimeout))",
            // The server's side of the TCP keepalive (libpq's `keepalives_*` are the client's): a backend whose client
            // vanished (its host lost, its pod gone) ends within about a minute rather than the kernel's two hours,
            // with its transaction and its session locks (a rebuild's, see ProjectionRebuild).
            "-c tcp_keepalives_idle=30", "-c tcp_keepalives_interval=10", "-c tcp_keepalives_count=3",
        ]
        if let searchPath {
            // Backslash-escape what libpq's options parser treats as separators.
            options.append("-c search_path=" + searchPath.replacingOccurrences(of: "\\", with: "\\\\")
                .replacingOccurrences(of: " ", with: "\\ "))
        }
        return options.joined(separator: " ")
    }

    /// libpq keywords and values: everything the connection string sets, with our defaults for what it leaves out and
    /// our session options appended to any it gives.
    package func keywords() throws -> [(String, String)] {
        let given = try parsedKeywords()
        var result = given.filter { $0.0 != "options" && $0.0 != "fallback_application_name" }
        let userOptions = given.first { $0.0 == "options" }?.1
        result.append(("options", [userOptions, sessionOptions].compactMap { $0 }.joined(separator: " ")))
        result.append(("fallback_application_name", applicationName))
        if !given.contains(where: { $0.0 == "connect_timeout" }) {
            result.append(("connect_timeout", String(connectTimeoutSeconds)))
        }
        if !given.contains(where: { $0.0 == "keepalives_idle" }) {
            result.append(("keepalives_idle", "30"))  // the kernel default is two hours
        }
        return result
    }

    /// The keywords the connection string itself sets, as libpq parses them.
    func parsedKeywords() throws -> [(String, String)] {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(connectionString, &errorMessage) else {
            defer { PQfreemem(errorMessage) }
            // libpq's message quotes the offending part, which may hold a password: keep only its first words.
            let reason = errorMessage.map { String(cString: $0) }.map(PostgresError.maskQuoted) ?? "invalid"
            throw PostgresError(kind: .connectFailed, message: "invalid connection string: \(reason)")
        }
        defer { PQconninfoFree(parsed) }
        var given: [(String, String)] = []
        var option = parsed
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val {
                given.append((String(cString: keyword), String(cString: value)))
            }
            option += 1
        }
        return given
    }

    package static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

extension ConnectionConfiguration {
    /// `connectionString` with its database replaced by `database`, in key/value form (values quoted as libpq
    /// expects). Used to reach sibling databases with the same credentials, e.g. per-test databases.
    public static func connectionString(_ connectionString: String, database: String) throws -> String {
        var keywords = try ConnectionConfiguration(connectionString: connectionString, applicationName: "")
            .parsedKeywords()
            .filter { $0.0 != "dbname" }
        keywords.append(("dbname", database))
        return keywords.map { key, value in
            "\(key)='" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
        }.joined(separator: " ")
    }
}
