import AuthService
import CatalogProxy
import FavoritesService
import Foundation
import ServiceKit
import Testing

/// docs/operations.md's configuration table is the services' settings registries, rendered: a setting added, dropped
/// or changed in code without the docs fails here. `FAVORITEME_WRITE_DOCS=1 scripts/test --filter SettingsTableTests`
/// writes the table instead.
@Suite struct SettingsTableTests {
    static let operations = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "docs/operations.md")
    static let begin = "<!-- settings table: generated from the services' settings; see Tests/APIContractTests/SettingsTableTests.swift -->"
    static let end = "<!-- end of settings table -->"

    @Test func operationsDocumentsEverySettingAsRegistered() throws {
        let table = SettingsTable.markdown([
            ("auth-service", try AuthServiceDefinition.settings()),
            ("catalog-proxy", try CatalogProxyDefinition.settings()),
            ("favorites-service", try FavoritesServiceDefinition.settings()),
        ])
        let document = try String(contentsOf: Self.operations, encoding: .utf8)
        let start = try #require(document.range(of: Self.begin), "no settings table marker in docs/operations.md")
        let stop = try #require(document.range(of: Self.end, range: start.upperBound..<document.endIndex))
        let documented = document[start.upperBound..<stop.lowerBound].trimmingCharacters(in: .whitespacesAndNewlines)
        if ProcessInfo.processInfo.environment["FAVORITEME_WRITE_DOCS"] == "1" {
            let rewritten = document.replacingCharacters(in: start.upperBound..<stop.lowerBound, with: "\n" + table + "\n")
            try rewritten.write(to: Self.operations, atomically: true, encoding: .utf8)
        } else {
            #expect(documented == table, "docs/operations.md's settings table differs from the services' registries")
        }
    }

    /// Every variable a service reads is named once per service, and every one says what it does.
    @Test func everySettingIsDeclaredOnceWithItsMeaning() throws {
        for settings in [try AuthServiceDefinition.settings(), try CatalogProxyDefinition.settings(),
                         try FavoritesServiceDefinition.settings()] {
            let variables = settings.map(\.variable)
            #expect(Set(variables).count == variables.count, "a variable declared twice: \(variables)")
            #expect(settings.allSatisfy { !$0.help.isEmpty }, "\(settings.filter { $0.help.isEmpty }.map(\.variable))")
        }
    }
}
