import Foundation
import Testing

/// scripts/check-client-availability, which CI runs in place of an Apple compiler's availability check: it passes on
/// the client as it is, and fails once an iOS 18-only call is added to a copy of it, unless that call is guarded.
@Suite struct AvailabilityCheckTests {
    /// The repository this test was built from.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A copy of what the check reads: the manifests, Clients/, Examples/ and the script with its list.
    static func copyOfTheClient() throws -> URL {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("availability-\(UUID().uuidString)")
        let files = FileManager.default
        try files.createDirectory(at: copy.appendingPathComponent("scripts"), withIntermediateDirectories: true)
        for path in ["Package.swift", "scripts/check-client-availability", "scripts/newer-apple-apis.tsv"] {
            try files.copyItem(at: root.appendingPathComponent(path), to: copy.appendingPathComponent(path))
        }
        for directory in ["Clients", "Examples"] {
            try copySources(from: root.appendingPathComponent(directory), to: copy.appendingPathComponent(directory))
        }
        return copy
    }

    /// Copies `source` without its hidden entries (an example's .build).
    static func copySources(from source: URL, to target: URL) throws {
        let files = FileManager.default
        try files.createDirectory(at: target, withIntermediateDirectories: true)
        for name in try files.contentsOfDirectory(atPath: source.path) where !name.hasPrefix(".") {
            let from = source.appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            _ = files.fileExists(atPath: from.path, isDirectory: &isDirectory)
            if isDirectory.boolValue {
                try copySources(from: from, to: target.appendingPathComponent(name))
            } else {
                try files.copyItem(at: from, to: target.appendingPathComponent(name))
            }
        }
    }

    /// Runs the check on `root`: its exit status and what it printed.
    static func check(_ root: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("scripts/check-client-availability").path,
                             "--root", root.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    static func append(_ code: String, to file: URL) throws {
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(code.utf8))
    }

    @Test func theClientAsItIsPasses() throws {
        let copy = try Self.copyOfTheClient()
        defer { try? FileManager.default.removeItem(at: copy) }
        let result = try Self.check(copy)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test func anIOS18OnlyCallFailsTheCheck() throws {
        let copy = try Self.copyOfTheClient()
        defer { try? FileManager.default.removeItem(at: copy) }
        let file = copy.appendingPathComponent("Clients/FavoriteMeClient/RetryPolicy.swift")
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        try Self.append("""

            func counted() -> Int {
                let count = Mutex<Int>(0)  // Synchronization, iOS 18
                return count.withLock { $0 }
            }

            """, to: file)
        let result = try Self.check(copy)
        #expect(result.status == 1)
        #expect(result.output.contains("Clients/FavoriteMeClient/RetryPolicy.swift:\(lines.count + 2): Synchronization.Mutex"),
                "\(result.output)")
        #expect(result.output.contains("iOS 18"))
    }

    @Test func theSameCallBehindAnAvailabilityCheckPasses() throws {
        let copy = try Self.copyOfTheClient()
        defer { try? FileManager.default.removeItem(at: copy) }
        try Self.append("""

            @available(iOS 18, macOS 15, *)
            func counted() -> Int { Mutex<Int>(0).withLock { $0 } }

            func countedWhereAvailable() -> Int {
                guard #available(iOS 18, macOS 15, *) else { return 0 }
                return Mutex<Int>(0).withLock { $0 }
            }

            """, to: copy.appendingPathComponent("Clients/FavoriteMeClient/RetryPolicy.swift"))
        let result = try Self.check(copy)
        #expect(result.status == 0, "\(result.output)")
    }

    /// iOS alone is not enough: the library also builds for macOS.
    @Test func anAnnotationForIOSAloneIsNotEnough() throws {
        let copy = try Self.copyOfTheClient()
        defer { try? FileManager.default.removeItem(at: copy) }
        let added = copy.appendingPathComponent("Examples/FavoritesSample/Sources/FavoritesSample/Newer.swift")
        try Data("""
            @available(iOS 18, *)
            func counted() -> Int { Mutex<Int>(0).withLock { $0 } }

            """.utf8).write(to: added)
        let result = try Self.check(copy)
        #expect(result.status == 1)
        #expect(result.output.contains("macOS 14"), "\(result.output)")
    }
}
