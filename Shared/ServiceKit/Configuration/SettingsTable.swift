/// The configuration table of docs/operations.md, made from the services' registries (``ServiceDefinition/settings()``):
/// one row per variable, in the order the services read them, with the services that read it.
public enum SettingsTable {
    public static func markdown(_ services: [(name: String, settings: [Setting])]) -> String {
        var order: [String] = []
        var readers: [String: [(service: String, setting: Setting)]] = [:]
        for (service, settings) in services {
            for setting in settings {
                if readers[setting.variable] == nil { order.append(setting.variable) }
                readers[setting.variable, default: []].append((service, setting))
            }
        }
        var lines = ["| Variable | Flag | Default | Accepts | Read by | Meaning |", "|---|---|---|---|---|---|"]
        for variable in order {
            let readBy = readers[variable] ?? []
            guard let setting = readBy.first?.setting else { continue }
            let cells = [
                "`\(variable)`",
                ServiceOptions.flags[variable].map { "`\($0)`" } ?? "",
                defaults(readBy),
                accepted(setting.accepts),
                readBy.count == services.count ? "all" : readBy.map(\.service).joined(separator: ", "),
                (setting.isSecret ? "**Secret.** " : "") + setting.help,
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// One default, or each service's where they differ (a port, a schema).
    private static func defaults(_ readBy: [(service: String, setting: Setting)]) -> String {
        let values = readBy.map { $0.setting.defaultValue.map { "`\($0)`" } ?? "—" }
        if Set(values).count <= 1 { return values.first ?? "—" }
        return zip(readBy, values).map { "\($0.service) \($1)" }.joined(separator: ", ")
    }

    private static func accepted(_ accepts: Setting.Accepted) -> String {
        switch accepts {
        case .text: ""
        case .baseURL: "http(s) URL"
        case .integer(let minimum, let maximum): "\(minimum)–\(maximum)"
        case .oneOf(let choices): choices.map { "`\($0)`" }.joined(separator: ", ")
        }
    }
}
