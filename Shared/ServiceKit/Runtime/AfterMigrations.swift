import Hummingbird
import ServiceLifecycle

extension Application where Responder == RouterResponder<AppRequestContext> {
    /// Adds background services that read or write the service's tables, held back until the migrations have run
    /// (the `beforeServerStarts` steps run after them), so that they never meet a schema that is not there yet.
    public mutating func addServicesAfterMigrations(_ services: [any Service]) {
        // None to run: adding the wrapper anyway would end at once, and a service that ends stops the group.
        guard !services.isEmpty else { return }
        let (migrated, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        beforeServerStarts {
            signal.yield()
            signal.finish()
        }
        addServices(AfterMigrations(migrated: migrated, services: services))
    }
}

/// Runs `services` side by side once `migrated` yields; returns at once if the service group stops before that.
struct AfterMigrations: Service {
    let migrated: AsyncStream<Void>
    let services: [any Service]

    func run() async throws {
        let started = await cancelWhenGracefulShutdown {
            var iterator = migrated.makeAsyncIterator()
            return await iterator.next() != nil
        }
        guard started else { return }
        try await withThrowingDiscardingTaskGroup { group in
            for service in services {
                group.addTask { try await service.run() }
            }
        }
    }
}
