import Configuration
import Foundation

/// Reads settings as text and parses them itself, collecting every value it cannot use.
///
/// swift-configuration's typed getters fall back to the default when a value does not parse, so a typo such as
/// `DATABASE_MIGRATE=chek` would silently mean `auto`. A service must refuse to start instead, naming the setting.
public struct StrictSettings {
    let reader: ConfigReader
    public private(set) var problems: [String] = []

    public init(reader: ConfigReader) {
        self.reader = reader
    }

    public mutating func string(_ key: String, default fallback: String, isSecret: Bool = false) -> String {
        guard let text = reader.string(forKey: ConfigKey(key), isSecret: isSecret) else { return fallback }
        guard !text.isEmpty else {
            problems.append("\(Self.environmentName(key)) is empty")
            return fallback
        }
        return text
    }

    /// A setting with no default: nil when unset.
    public mutating func optionalString(_ key: String, isSecret: Bool = false) -> String? {
        guard let text = reader.string(forKey: ConfigKey(key), isSecret: isSecret) else { return nil }
        return text.isEmpty ? nil : text
    }

    public mutating func int(_ key: String, default fallback: Int, in range: ClosedRange<Int>) -> Int {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            problems.append("\(Self.environmentName(key)) must be a whole number in \(range), got \"\(text)\"")
            return fallback
        }
        return value
    }

    /// An http(s) URL with a host and nothing after it but an optional path prefix.
    public mutating func baseURL(_ key: String, default fallback: String) -> String {
        let text = string(key, default: fallback)
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
              url.host != nil, url.query == nil, url.fragment == nil, url.user == nil
        else {
            // The value is not repeated: a URL may carry credentials.
            problems.append("\(Self.environmentName(key)) must be an http(s) base URL without query or credentials")
            return fallback
        }
        return text
    }

    public mutating func choice<Value: RawRepresentable<String> & CaseIterable>(_ key: String, default fallback: Value)
        -> Value
    {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        guard let value = Value(rawValue: text.lowercased()) else {
            let allowed = Value.allCases.map(\.rawValue).joined(separator: ", ")
            problems.append("\(Self.environmentName(key)) must be one of \(allowed), got \"\(text)\"")
            return fallback
        }
        return value
    }

    /// `true` or `false` (any letter case).
    public mutating func bool(_ key: String, default fallback: Bool) -> Bool {
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default:
            problems.append("\(Self.environmentName(key)) must be true or false, got \"\(text)\"")
            return fallback
        }
    }

    /// Records a setting that parsed but cannot be used (`reason` completes "SETTING …").
    public mutating func reject(_ key: String, _ reason: String) {
        problems.append("\(Self.environmentName(key)) \(reason)")
    }

    /// Throws ``ConfigurationError`` naming every setting that could not be used.
    public func validate() throws {
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
    }

    /// The environment variable a key is read from: `http.maxBodyBytes` → `HTTP_MAX_BODY_BYTES`.
    static func environmentName(_ key: String) -> String {
        var name = ""
        for character in key {
            if character == "." {
                name.append("_")
            } else if character.isUppercase {
                name.append("_")
                name.append(character)
            } else {
                name.append(character.uppercased())
            }
        }
        return name
    }
}

/// Settings a service cannot start with; the message lists each one.
public struct ConfigurationError: Error, CustomStringConvertible {
    public let problems: [String]
    public var description: String { "invalid configuration: " + problems.joined(separator: "; ") }
}
