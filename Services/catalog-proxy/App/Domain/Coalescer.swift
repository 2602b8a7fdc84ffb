import Foundation
import Locking
import Logging

/// The one place that decides when identical work is done once: the response cache's loads (``ResponseCache``), the
/// upstream requests (``StepRunner``) and the resolutions of references (``ItemResolver``) all ask it, each under keys
/// of its own (`response|`, `upstream|`, `resolve|`).
///
/// - **On this replica**, work for a key in flight is joined: one task per key, which a waiter's cancellation does not
///   cancel (others may wait for it).
/// - **Across replicas**, only for work whose result is kept in PostgreSQL (shared upstream answers, resolved items):
///   the first replica claims the key (``ReplicaClaims``) and works; the others read what it keeps. This is here, and
///   not in the cache, because only a result kept in the database can be handed from one replica to another: the claim
///   is what keeps replicas from making the same upstream call, and the key it needs is the upstream work's.
///
/// Not coalescing: a dataset's refresh takes a claim without waiting for anyone (``RefreshDataset``), and the daily
/// quota's gate reserves blocks of calls one reservation at a time (``UpstreamGate``): every call admitted is its own.
final class Coalescer: Sendable {
    private let inFlight = Locked<[String: Task<any Sendable, any Error>]>([:])
    /// Nil where one replica is all there is (tests of the cache).
    private let claims: (any ReplicaClaims)?

    init(claims: (any ReplicaClaims)? = nil) {
        self.claims = claims
    }

    /// `work`'s value for `key`: the value of the same key's work in flight on this replica (`joined`), else of `work`,
    /// started now.
    func once<Value: Sendable>(_ key: String, _ work: @escaping @Sendable () async throws -> Value) async throws
        -> (value: Value, joined: Bool)
    {
        let (task, joined) = inFlightTask(key, work)
        guard let value = try await task.value as? Value else {
            throw CoalescingError.keyShared(key)  // two kinds of work under one key: a caller's keys are its own
        }
        return (value, joined)
    }

    /// Starts `work` for `key` unless the same key's work is in flight, and returns at once (a background refresh).
    func start<Value: Sendable>(_ key: String, _ work: @escaping @Sendable () async throws -> Value) {
        _ = inFlightTask(key, work)
    }

    private func inFlightTask<Value: Sendable>(_ key: String, _ work: @escaping @Sendable () async throws -> Value)
        -> (Task<any Sendable, any Error>, joined: Bool)
    {
        let inFlight = inFlight
        return inFlight.withLock { tasks in
            if let running = tasks[key] { return (running, true) }
            // Unstructured: a request cancelled while it waits does not cancel work others wait for.
            let task = Task<any Sendable, any Error> {
                defer { _ = inFlight.withLock { $0.removeValue(forKey: key) } }
                return try await work()
            }
            tasks[key] = task
            return (task, false)
        }
    }

    /// `work`'s value for `key`, done once on this replica and once across replicas: what another replica kept
    /// (`lookup`) if it is there, else this replica's claim and its `work`, else (another replica holds the claim) what
    /// that replica keeps, read with `lookup` while its claim lasts. If nothing appears (that replica failed or died),
    /// this one works after all. A database error on the way is not the work's fault: it goes ahead unclaimed.
    func once<Value: Sendable>(
        _ key: String, acrossReplicasFor duration: TimeInterval, logger: Logger,
        lookup: @escaping @Sendable () async throws -> Value?, _ work: @escaping @Sendable () async throws -> Value
    ) async throws -> Value {
        let claims = claims
        return try await once(key) { () async throws -> Value in
            do {
                if let value = try await lookup() { return value }
            } catch {
                logger.warning("could not read what another replica kept", metadata: ["error": "\(error)"])
            }
            guard let claims else { return try await work() }
            return try await Self.claimed(key, duration: duration, claims: claims, logger: logger, lookup: lookup,
                                          work: work)
        }.value
    }

    private static func claimed<Value: Sendable>(
        _ key: String, duration: TimeInterval, claims: any ReplicaClaims, logger: Logger,
        lookup: () async throws -> Value?, work: () async throws -> Value
    ) async throws -> Value {
        let claimed: Bool
        do {
            claimed = try await claims.claim([key], for: duration).contains(key)
        } catch {
            logger.warning("could not claim a fetch; fetching unclaimed", metadata: ["error": "\(error)"])
            return try await work()
        }
        if claimed {
            do {
                let value = try await work()
                await claims.release([key], logger: logger)
                return value
            } catch {
                await claims.release([key], logger: logger)
                throw error
            }
        }
        let deadline = ContinuousClock.now + .seconds(duration)
        var pause = Duration.milliseconds(25)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: pause)
            pause = min(pause * 2, .milliseconds(250))
            do {
                if let value = try await lookup() { return value }
                if try await claims.held([key]).isEmpty { break }
            } catch {
                break
            }
        }
        return try await work()
    }
}

enum CoalescingError: Error {
    case keyShared(String)
}

/// Claims on keys shared by every replica, each held for a while (``FetchClaims``, in PostgreSQL).
protocol ReplicaClaims: Sendable {
    /// Claims those of `keys` that no other replica holds, for `duration`; returns the keys claimed.
    func claim(_ keys: [String], for duration: TimeInterval) async throws -> Set<String>
    /// Which of `keys` another replica still holds.
    func held(_ keys: [String]) async throws -> Set<String>
    /// Gives the claims up; a failure only means they lapse on their own (logged).
    func release(_ keys: [String], logger: Logger) async
}
