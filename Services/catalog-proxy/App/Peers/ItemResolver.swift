import Contracts
import Foundation
import Logging

/// Turns search results' references into items (``CatalogSource/resolve(reference:)``): each reference resolved once
/// for every replica and kept (``KeptItems``), each resolution run once at a time however many requests and
/// replicas want it (``Coalescer``, under `resolve|<experience>|<reference>`), a page's fan-out bounded, and a page
/// that waits no longer than `pageDeadline`.
///
/// A cold page of N Rijksmuseum objects costs up to 3N+ record GETs; a warm one none.
struct ItemResolver: Sendable {
    let runner: StepRunner
    let kept: KeptItems
    let coalescer: Coalescer
    /// Resolutions one request starts at a time.
    let concurrencyPerRequest: Int
    /// How long a page waits for its items; what is still resolving then is left out (the page says it is partial)
    /// and lands in the store for the next request.
    let pageDeadline: Duration

    /// How long a replica's claim on a resolution holds the others back: a few record GETs in a row.
    static let claimDuration: TimeInterval = 10
    /// Resolutions one request runs at a time: a whole page of the largest size (30 objects), so a cold page waits for
    /// one chain of record GETs (about four upstream round trips), not for one per wave of objects. The upstream
    /// client's bound (64 calls) and the HTTP client's 32 connections per host stay above it.
    static let onePageAtOnce = 32

    struct Outcome: Sendable {
        /// By reference; a reference the upstream no longer has is absent (and so is one that failed).
        var items: [String: CatalogItem]
        /// Why the references that could not be resolved failed (timeouts included): none means the page is whole.
        var failures: [UpstreamFailure]
    }

    /// The items of `references`, resolving those not kept (or kept past their freshness) within the page deadline;
    /// a kept copy past its freshness stands in for one whose resolution fails.
    func items(for references: [String], source: any CatalogSource, caller: UpstreamCaller) async -> Outcome {
        let logger = caller.logger
        guard !references.isEmpty else { return Outcome(items: [:], failures: []) }
        var copies: [String: KeptItems.Copy] = [:]
        do {
            copies = try await kept.copies(resolvedFrom: references, in: source.experience)
        } catch {
            logger.warning("could not read resolved items; resolving them again", metadata: ["error": "\(error)"])
        }
        var items = copies.filter(\.value.isFresh).mapValues(\.item)
        var seen = Set<String>()
        let missing = references.filter { items[$0] == nil && seen.insert($0).inserted }
        let outcomes = await resolve(missing, source: source, caller: caller)
        var failures: [UpstreamFailure] = []
        for reference in missing {
            switch outcomes[reference] {
            case .success(let item?):
                items[reference] = item
            case .success(nil):
                break  // the upstream no longer has it
            case .failure(let error):
                if let copy = copies[reference] {
                    items[reference] = copy.item
                    logger.warning("serving a kept item past its freshness", metadata: ["age_seconds": "\(copy.age)"])
                } else {
                    failures.append(error as? UpstreamFailure ?? .failed("\(type(of: error))"))
                }
            case nil:
                if let copy = copies[reference] { items[reference] = copy.item } else { failures.append(.timeout) }
            }
        }
        return Outcome(items: items, failures: failures)
    }

    /// One reference's item, waiting for the whole resolution (a detail has nothing to show without it).
    func item(for reference: String, source: any CatalogSource, caller: UpstreamCaller) async throws -> CatalogItem? {
        try await resolution(of: reference, source: source, caller: caller)
    }

    /// Resolves `references`, at most ``concurrencyPerRequest`` at a time, until all are done or the deadline passes.
    private func resolve(_ references: [String], source: any CatalogSource, caller: UpstreamCaller) async
        -> [String: Result<CatalogItem?, any Error>]
    {
        guard !references.isEmpty else { return [:] }
        let (outcomes, continuation) = AsyncStream.makeStream(of: (String, Result<CatalogItem?, any Error>).self)
        var pending = references[...]
        var running = 0
        func startNext() {
            guard let reference = pending.popFirst() else { return }
            running += 1
            // The resolution goes on past the deadline (its item is kept for the next request); only the wait stops.
            Task {
                do {
                    continuation.yield((reference, .success(try await resolution(of: reference, source: source,
                                                                                 caller: caller))))
                } catch {
                    continuation.yield((reference, .failure(error)))
                }
            }
        }
        let deadline = pageDeadline
        let timer = Task {
            try? await Task.sleep(for: deadline)
            continuation.finish()
        }
        while running < concurrencyPerRequest, !pending.isEmpty { startNext() }
        var results: [String: Result<CatalogItem?, any Error>] = [:]
        for await (reference, result) in outcomes {
            results[reference] = result
            running -= 1
            startNext()
            if running == 0 { break }
        }
        timer.cancel()
        continuation.finish()
        return results
    }

    /// The one resolution of `reference` for every replica: run through the source's steps, and kept (or forgotten,
    /// when the upstream no longer has the record).
    private func resolution(of reference: String, source: any CatalogSource, caller: UpstreamCaller) async throws
        -> CatalogItem?
    {
        let (runner, kept, logger) = (runner, kept, caller.logger)
        return try await coalescer.once("resolve|\(source.experience)|\(reference)",
                                        acrossReplicasFor: Self.claimDuration, logger: logger) {
            () async throws -> CatalogItem?? in
            // Only a kept item ends the wait; "gone" is not kept, so a waiter asks the upstream itself then.
            guard let copy = try await kept.copies(resolvedFrom: [reference], in: source.experience)[reference],
                  copy.isFresh
            else { return .none }
            return .some(copy.item)
        } _: {
            let item = try await runner.run(source.resolve(reference: reference), for: caller)
            do {
                if let item {
                    try await kept.keep(item, resolvedFrom: reference)
                } else {
                    try await kept.forget(resolvedFrom: reference, in: source.experience)
                }
            } catch {
                logger.warning("could not keep a resolved item", metadata: ["error": "\(error)"])
            }
            return item
        }
    }
}
