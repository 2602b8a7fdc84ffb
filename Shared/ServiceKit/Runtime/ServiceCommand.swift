import ArgumentParser
import Configuration
import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals

/// The command-line flags every service accepts. Each overrides its environment variable; anything not given here
/// comes from the environment, then from the defaults.
public struct ServiceOptions: ParsableArguments {
    @Option(help: "Address to bind (HTTP_HOST).") public var host: String?
    @Option(help: "Port to listen on (HTTP_PORT).") public var port: Int?
    @Option(help: "trace, debug, info, notice, warning, error or critical (LOG_LEVEL).") public var logLevel: String?
    @Option(help: "json or text (LOG_FORMAT).") public var logFormat: String?

    public init() {}

    /// The variable each flag stands for, for the configuration table.
    static let flags = ["HTTP_HOST": "--host", "HTTP_PORT": "--port", "LOG_LEVEL": "--log-level",
                        "LOG_FORMAT": "--log-format"]

    /// Flags first, then the environment. Secrets are only ever read from the environment, never from flags
    /// (flags are visible to every user in the process list).
    public func configReader() -> ConfigReader {
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        if let host { values["http.host"] = .init(.string(host), isSecret: false) }
        // As text, like environment variables: every value goes through the same strict parsing.
        if let port { values["http.port"] = .init(.string(String(port)), isSecret: false) }
        if let logLevel { values["log.level"] = .init(.string(logLevel), isSecret: false) }
        if let logFormat { values["log.format"] = .init(.string(logFormat), isSecret: false) }
        return ConfigReader(providers: [
            InMemoryProvider(name: "flags", values: values),
            EnvironmentVariablesProvider(secretsSpecifier: .specific(ServiceConfiguration.secretEnvironmentVariables)),
        ])
    }
}

/// What a service's library gives its executable: what sets it apart, its composition root, and the settings of its
/// own that it reads besides the kit's.
public protocol ServiceDefinition {
    static var defaults: ServiceDefaults { get }
    static func buildApplication(reader: ConfigReader, routeTable: RouteTable) async throws -> ServiceApplication
    static func ownSettings(reader: ConfigReader) throws -> [Setting]
}

extension ServiceDefinition {
    /// Every setting the service reads, the kit's first, as declared where they are read: the service's registry.
    public static func settings() throws -> [Setting] {
        let unset = ConfigReader(provider: InMemoryProvider(values: [:]))
        return try ServiceConfiguration(reader: unset, defaults: defaults).declaredSettings + ownSettings(reader: unset)
    }
}

/// `settings`: every setting the service of `Definition` reads, as JSON (the deployment checks read it).
public struct SettingsCommand<Definition: ServiceDefinition>: ParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "settings",
            abstract: "Print every setting the service reads (variable, default, accepted values, meaning) as JSON."
        )
    }

    public init() {}

    public func run() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
        print(String(decoding: try encoder.encode(Definition.settings()), as: UTF8.self))
    }
}

/// `serve`, every service's default subcommand: runs the service of `Definition` until SIGTERM.
public struct Serve<Definition: ServiceDefinition>: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(commandName: "serve", abstract: "Run the service (the default).")
    }

    @OptionGroup var options: ServiceOptions

    public init() {}

    public func run() async throws {
        try await ServiceRunner.run(options: options, defaults: Definition.defaults) { reader in
            try await Definition.buildApplication(reader: reader, routeTable: RouteTable())
        }
    }
}

/// Runs a service until SIGTERM or SIGINT, then shuts it down gracefully: the server stops accepting, in-flight
/// requests finish (bounded by `SHUTDOWN_TIMEOUT_SECONDS`), then the HTTP client and the database pool close, and the
/// trace exporter, when one runs, flushes.
enum ServiceRunner {
    static func run(
        options: ServiceOptions,
        defaults: ServiceDefaults,
        build: (ConfigReader) async throws -> ServiceApplication
    ) async throws {
        let reader = options.configReader()
        let configuration = try ServiceConfiguration(reader: reader, defaults: defaults)
        let traceExporter = try TraceExport.bootstrap(serviceName: defaults.name)
        bootstrapLogging(format: configuration.logFormat, level: configuration.logLevel,
                         withTraceIDs: traceExporter != nil)
        let app = try await build(reader)
        // The exporter first, so it stops last and flushes the spans of the requests that finished during shutdown.
        var groupConfiguration = ServiceGroupConfiguration(
            services: [traceExporter, app].compactMap { $0 }, gracefulShutdownSignals: [.sigterm, .sigint],
            logger: app.logger
        )
        groupConfiguration.maximumGracefulShutdownDuration = configuration.shutdownTimeout
        try await ServiceGroup(configuration: groupConfiguration).run()
        app.logger.info("stopped")
    }
}
