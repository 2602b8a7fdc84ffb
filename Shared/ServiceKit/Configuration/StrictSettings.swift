import Configuration
import Foundation

/// Reads settings as text and parses them itself, collecting every value it cannot use, and records each setting as
/// it is declared where it is read (key, default, range, meaning): a service's settings are registered once, there.
///
/// swift-configuration's typed getters fall back to the default when a value does not parse, so a typo such as
/// `DATABASE_MIGRATE=chek` would silently mean `auto`. A service must refuse to start instead, naming the setting.
public struct StrictSettings {
    let reader: ConfigReader
    public private(set) var problems: [String] = []
    /// Every setting read so far, in order: the registry the docs' table and the deployment checks are made from.
    public private(set) var declared: [Setting] = []

    public init(reader: ConfigReader) {
        self.reader = reader
    }

    public mutating func string(_ key: String, default fallback: String, isSecret: Bool = false, help: String) -> String {
        declare(key, default: isSecret ? nil : fallback, accepts: .text, isSecret: isSecret, help: help)
        guard let text = reader.string(forKey: ConfigKey(key), isSecret: isSecret) else { return fallback }
        guard !text.isEmpty else {
            problems.append("\(Self.environmentName(key)) is empty")
            return fallback
        }
        return text
    }

    /// A setting with no default: nil when unset.
    public mutating func optionalString(_ key: String, isSecret: Bool = false, help: String) -> String? {
        declare(key, default: nil, accepts: .text, isSecret: isSecret, help: help)
        guard let text = reader.string(forKey: ConfigKey(key), isSecret: isSecret) else { return nil }
        return text.isEmpty ? nil : text
    }

    public mutating func int(_ key: String, default fallback: Int, in range: ClosedRange<Int>, help: String) -> Int {
        declare(key, default: String(fallback), accepts: .integer(range.lowerBound, range.upperBound), help: help)
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        guard let value = Int(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
            problems.append("\(Self.environmentName(key)) must be a whole number in \(range), got \"\(text)\"")
            return fallback
        }
        return value
    }

    /// An http(s) URL with a host and nothing after it but an optional path prefix.
    public mutating func baseURL(_ key: String, default fallback: String, help: String) -> String {
        let text = string(key, default: fallback, help: help)
        declared[declared.count - 1].accepts = .baseURL
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
              url.host != nil, url.query == nil, url.fragment == nil, url.user == nil
        else {
            // The value is not repeated: a URL may carry credentials.
            problems.append("\(Self.environmentName(key)) must be an http(s) base URL without query or credentials")
            return fallback
        }
        return text
    }

    public mutating func choice<Value: RawRepresentable<String> & CaseIterable>(
        _ key: String, default fallback: Value, help: String
    ) -> Value {
        declare(key, default: fallback.rawValue, accepts: .oneOf(Value.allCases.map(\.rawValue)), help: help)
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        guard let value = Value(rawValue: text.lowercased()) else {
            let allowed = Value.allCases.map(\.rawValue).joined(separator: ", ")
            problems.append("\(Self.environmentName(key)) must be one of \(allowed), got \"\(text)\"")
            return fallback
        }
        return value
    }

    /// `true` or `false` (any letter case).
    public mutating func bool(_ key: String, default fallback: Bool, help: String) -> Bool {
        declare(key, default: String(fallback), accepts: .oneOf(["true", "false"]), help: help)
        guard let text = reader.string(forKey: ConfigKey(key)) else { return fallback }
        switch text.lowercased() {
        case "true": return true
        case "false": return false
        default:
            problems.append("\(Self.environmentName(key)) must be true or false, got \"\(text)\"")
            return fallback
        }
    }

    /// Registers a variable that something else reads (a library), so that it is documented and checked like the rest.
    public mutating func readElsewhere(_ variable: String, help: String) {
        declared.append(Setting(variable: variable, defaultValue: nil, accepts: .text, isSecret: false, help: help))
    }

    private mutating func declare(_ key: String, default fallback: String?, accepts: Setting.Accepted,
                                  isSecret: Bool = false, help: String) {
        let variable = Self.environmentName(key)
        guard !declared.contains(where: { $0.variable == variable }) else { return }  // read twice, declared once
        declared.append(Setting(variable: variable, defaultValue: fallback, accepts: accepts,
                                isSecret: isSecret, help: help))
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

/// One setting, as its service declares it where it reads it.
public struct Setting: Sendable, Hashable, Encodable {
    /// What a value may be.
    public enum Accepted: Sendable, Hashable {
        case text
        /// An http(s) URL with a host and at most a path prefix.
        case baseURL
        case integer(Int, Int)
        case oneOf([String])
    }

    /// The environment variable (`HTTP_PORT`).
    public let variable: String
    /// Nil when unset by default, and for secrets (a development default is no value to publish).
    public let defaultValue: String?
    public var accepts: Accepted
    public let isSecret: Bool
    /// What it does, for the configuration table in docs/operations.md.
    public let help: String

    private enum Key: String, CodingKey {
        case variable, defaultValue = "default", kind, minimum, maximum, choices, secret, help
    }

    /// Flat, for the deployment checks: `{"variable", "default", "kind", "minimum", "maximum", "choices", "secret"}`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(variable, forKey: .variable)
        try container.encodeIfPresent(defaultValue, forKey: .defaultValue)
        switch accepts {
        case .text: try container.encode("text", forKey: .kind)
        case .baseURL: try container.encode("base-url", forKey: .kind)
        case .integer(let minimum, let maximum):
            try container.encode("integer", forKey: .kind)
            try container.encode(minimum, forKey: .minimum)
            try container.encode(maximum, forKey: .maximum)
        case .oneOf(let choices):
            try container.encode("choice", forKey: .kind)
            try container.encode(choices, forKey: .choices)
        }
        try container.encode(isSecret, forKey: .secret)
        try container.encode(help, forKey: .help)
    }
}
