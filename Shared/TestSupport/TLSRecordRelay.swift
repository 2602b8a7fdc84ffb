import Foundation

/// A TLS front for a PostgreSQL server that answers in TLS records of up to 16 KiB, where PostgreSQL 15's own hold at
/// most 8 KiB (see `tls-record-relay.py` beside this file, which it runs with `python3`). Clients reach it with
/// `sslmode=require`; it forwards plain bytes to the server.
public struct TLSRecordRelay: Sendable {
    public let port: Int
    private let processID: Int32

    /// Starts a relay in front of the server at `host`:`port`, with a certificate of its own. It ends with the test
    /// process, or with ``stop()``.
    public static func start(upstreamHost host: String, upstreamPort port: Int) throws -> TLSRecordRelay {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory())
            .appendingPathComponent("favoriteme-tls-relay-\(getpid())-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }  // the relay has read them once it has started
        let key = directory.appendingPathComponent("relay.key").path
        let certificate = directory.appendingPathComponent("relay.crt").path
        try SelfSignedCertificate.make(key: key, certificate: certificate) { _ = try runProgram($0, $1) }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("tls-record-relay.py").path
        let output = try runProgram("/usr/bin/env", ["python3", script, host, String(port), certificate, key, String(getpid())])
        let fields = output.split(whereSeparator: \.isWhitespace)
        guard fields.count == 2, let listening = Int(fields[0]), let processID = Int32(fields[1]) else {
            throw TestSupportError("the TLS relay did not start: \(output)")
        }
        return TLSRecordRelay(port: listening, processID: processID)
    }

    public func stop() {
        kill(processID, SIGTERM)
    }
}

/// A throwaway self-signed certificate (an EC key, quick to make) made with the `openssl` command.
enum SelfSignedCertificate {
    static let openssl = "/usr/bin/openssl"

    /// Writes `key` and `certificate`, running `openssl` through `run` (as the cluster's owner, or as ourselves).
    static func make(key: String, certificate: String, run: (String, [String]) throws -> Void) throws {
        guard FileManager.default.isExecutableFile(atPath: openssl) else {
            throw TestSupportError("openssl is not installed (no \(openssl)); run scripts/test, which installs it")
        }
        try run(openssl, ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                          "-subj", "/CN=127.0.0.1", "-days", "30", "-keyout", key, "-out", certificate])
    }
}
