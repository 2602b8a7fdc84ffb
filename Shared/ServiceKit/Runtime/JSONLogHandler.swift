import Foundation
import Locking
import Logging
import OTel

/// One JSON object per line on stdout: `{"time":…,"level":…,"logger":…,"message":…,<metadata>}`.
///
/// Structured so that a log pipeline can filter on `request_id`; never given secrets (configuration values marked
/// secret are not logged, and database errors describe themselves without parameters).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String

    /// Serializes writes so lines from concurrent requests never interleave.
    private static let output = Locked(())

    public init(label: String, level: Logger.Level) {
        self.label = label
        self.logLevel = level
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields: [String: Field] = [
            "time": .text(Self.timestamp()),
            "level": .text(event.level.rawValue),
            "logger": .text(label),
            "message": .text(event.message.description),
        ]
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        for (key, value) in merged where fields[key] == nil { fields[key] = Field(value) }
        guard var line = try? Self.encoder.encode(fields) else { return }
        line.append(UInt8(ascii: "\n"))
        Self.output.withLock { _ in FileHandle.standardOutput.write(line) }
    }

    /// JSONEncoder (Swift all through) rather than JSONSerialization, whose sorting of keys in corelibs Foundation
    /// has crashed on a freed bridged string.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    /// A metadata value as the line writes it.
    private enum Field: Encodable {
        case text(String)
        case list([Field])
        case object([String: Field])

        init(_ value: Logger.Metadata.Value) {
            switch value {
            case .string(let string): self = .text(string)
            case .stringConvertible(let convertible): self = .text(convertible.description)
            case .array(let array): self = .list(array.map(Field.init))
            case .dictionary(let dictionary): self = .object(dictionary.mapValues(Field.init))
            }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .text(let text): try container.encode(text)
            case .list(let list): try container.encode(list)
            case .object(let object): try container.encode(object)
            }
        }
    }

    private static func timestamp() -> String {
        Date.now.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// Installs the process-wide log handler once, at start-up (swift-log allows one bootstrap per process). With
/// `withTraceIDs`, every line logged inside a span carries `trace_id` and `span_id`.
public func bootstrapLogging(format: ServiceConfiguration.LogFormat, level: Logger.Level, withTraceIDs: Bool = false) {
    LoggingSystem.bootstrap({ label, provider in
        switch format {
        case .json:
            var handler = JSONLogHandler(label: label, level: level)
            handler.metadataProvider = provider
            return handler
        case .text:
            var handler = StreamLogHandler.standardOutput(label: label, metadataProvider: provider)
            handler.logLevel = level
            return handler
        }
    }, metadataProvider: withTraceIDs ? OTel.makeLoggingMetadataProvider() : nil)
}
