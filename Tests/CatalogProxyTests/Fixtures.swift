import Foundation
import Testing

/// The recorded upstream responses in `../shared/fixtures` (beside the repository), read-only.
enum Fixtures {
    static let root: URL = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "shared/fixtures")

    /// The HTTP body of a fixture: nock recordings (`*.nock.json`) wrap it as `[{status, response, …}]`.
    static func body(_ path: String) throws -> Data {
        let data = try Data(contentsOf: root.appending(path: path))
        guard path.hasSuffix(".nock.json") else { return data }
        let recording = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]]).first
        return try JSONSerialization.data(withJSONObject: try #require(recording?["response"]))
    }

    static func status(_ path: String) throws -> Int {
        guard path.hasSuffix(".nock.json") else { return 200 }
        let data = try Data(contentsOf: root.appending(path: path))
        let recording = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]]).first
        return try #require(recording?["status"] as? Int)
    }

    static func files(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appending(path: directory).path())
            .filter { $0.hasSuffix(".json") }.sorted().map { "\(directory)/\($0)" }
    }
}
