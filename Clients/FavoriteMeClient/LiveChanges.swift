import Contracts
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What ``FavoriteMeClient/liveChanges(in:)`` tells an app.
public enum LiveChange: Sendable, Hashable {
    /// The stream is open (again): the device's favorites are current.
    case connected
    /// A change made on any of the user's devices, already in the device's favorites.
    case changed(FavoriteChange)
    /// The device was too far behind for the stream to replay each change: its favorites were read again. Redraw.
    case resynced
    /// The connection dropped or could not be made (no network, a replica going away); the stream reconnects by
    /// itself after `retryIn`, or at once when the network returns or the app comes to the foreground.
    case disconnected(FavoriteMeError, retryIn: Duration)
}

extension FavoriteMeClient {
    /// The signed-in user's changes as they happen on any of their devices, each already applied to the device's
    /// favorites (``syncedFavorites(in:)``, ``hearts(in:)``) before it is told: a heart filled on the phone fills on
    /// the tablet. `experience` limits what is told, not what is kept.
    ///
    /// The stream belongs to the user signed in when it starts: it ends when their session ends (signed out here or
    /// on another device) or when another user signs in, so it never runs on with a session that is over; follow
    /// ``authEvents()`` and start a new one for the next user. It also ends when the task iterating it is cancelled.
    ///
    /// It resumes from the device's own position, so nothing is missed across reconnects, launches or a network that
    /// comes and goes. It reconnects by itself: at once when its access token expired (with a fresh one) or its server
    /// shut down (to another); after a capped backoff (``RetryPolicy``) when the connection was lost or could not be
    /// made, cut short by ``networkDidReturn()`` and ``appDidBecomeActive()``. Each change wakes a sync of the changes
    /// feed (one request, shared by changes that arrive together), so the device's copy and its queue of writes are
    /// kept exactly as ``syncFavorites()`` keeps them. A change of the user's profile on another device (experience,
    /// preferences, display name) is read again and told on ``authEvents()`` as ``AuthEvent/refreshed(_:)``. Events
    /// of types this version does not know are skipped.
    public func liveChanges(in experience: ExperienceID? = nil) -> AsyncStream<LiveChange> {
        AsyncStream { continuation in
            let task = Task {
                if let owner = try? await self.sessions.current()?.user.id {
                    await self.followChanges(of: owner, in: experience) { continuation.yield($0) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Follows `owner`'s changes until their session is no longer the device's.
    private func followChanges(of owner: UUID, in experience: ExperienceID?,
                               tell: @escaping @Sendable (LiveChange) -> Void) async {
        let sessionEvents = await authEvents()
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.reconnecting(owner, in: experience, tell: tell) }
            group.addTask {
                for await event in sessionEvents {
                    switch event {
                    case .signedIn(let user), .refreshed(let user): if user.id != owner { return }
                    case .signedOut, .sessionExpired: return
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Connection after connection, with a capped backoff between failed ones, until the session ends.
    private func reconnecting(_ owner: UUID, in experience: ExperienceID?, tell: @Sendable (LiveChange) -> Void)
        async
    {
        var failures = 0
        while !Task.isCancelled {
            let failure: FavoriteMeError
            do {
                guard await openCurrentUser() == owner, let start = await outbox.syncStart(for: owner) else { return }
                switch try await followStream(of: owner, after: start.since, in: experience, tell: tell) {
                case .sessionEnded: return
                case .reconnect: failures = 0; continue
                case .dropped(let afterConnecting):
                    if afterConnecting { failures = 0 }
                    failure = .transport("the change stream closed")
                }
            } catch FavoriteMeError.signedOut {
                return
            } catch FavoriteMeError.refused(let problem) where problem.type == .syncPositionAhead {
                // The device's copy is not of this account's log: a sync starts it again from the beginning.
                if (try? await syncFavorites()) != nil { continue }
                failure = .refused(problem)
            } catch let error as FavoriteMeError {
                failure = error
            } catch {
                return  // cancelled
            }
            if Task.isCancelled { return }
            failures += 1
            // The server's Retry-After, if any, within the same cap: a wake still reconnects at once.
            let retryAfter = failure.retryAfter.map { min($0, Int(retryPolicy.longestDelay)) }
            let seconds = retryPolicy.delay(afterFailures: failures, retryAfter: retryAfter, jitter: .random(in: 0...1))
            let wakes = await wakeup.wakes  // a wake while the app hears of this failure still counts
            tell(.disconnected(failure, retryIn: .milliseconds(Int64(seconds * 1000))))
            await wakeup.sleep(for: seconds, since: wakes)
        }
    }

    /// How one connection of the stream ended.
    private enum StreamEnd {
        /// The session ended: nothing to reconnect with.
        case sessionEnded
        /// The server asked for a new connection (token expired, shutting down): at once.
        case reconnect
        /// The connection was lost without a word: after a pause (short if it had been open).
        case dropped(afterConnecting: Bool)
    }

    /// One connection: opened with the session's token (refreshed once if the server says it expired), read until it
    /// ends. Each `change` whose version the device's copy has not reached runs a sync.
    private func followStream(of user: UUID, after position: Int64, in experience: ExperienceID?,
                              tell: (LiveChange) -> Void) async throws -> StreamEnd {
        let call = Call(method: "GET", path: "/v1/favorites/stream",
                        query: [URLQueryItem(name: "after", value: String(position))])
        var credential = try await sessions.credential(for: user, refresh: refresher)
        var events: AsyncThrowingStream<ServerSentEvent, any Error>
        do {
            events = try await openEventStream(call, token: credential.token)
        } catch FavoriteMeError.refused(let problem) where Self.asksForRefresh(problem) {
            credential = try await sessions.refreshed(after: credential, refresh: refresher)
            events = try await openEventStream(call, token: credential.token)
        }
        var synced = position
        var connected = false
        do {
            for try await event in events {
                switch event.type {
                case "ready":
                    connected = true
                    tell(.connected)
                case "change":
                    guard let version = event.id.flatMap(Int64.init), version > synced else { continue }
                    let report = try await syncFavorites()
                    synced = await outbox.syncStart(for: user)?.since ?? synced
                    for change in report.changes where experience == nil || change.experience == experience {
                        tell(.changed(change))
                    }
                case "reload":
                    _ = try await syncFavorites()
                    synced = await outbox.syncStart(for: user)?.since ?? synced
                    tell(.resynced)
                case "profile":
                    // The profile changed, here or on another device: read as the server has it now, which
                    // ``authEvents()`` tells as `.refreshed`. A failed read is no reason to drop the stream.
                    _ = try? await me()
                case "end":
                    if event.data.contains("session-ended") { return .sessionEnded }
                    if event.data.contains("token-expired") {
                        // Expired on the server's clock, which may run ahead of this one: refresh before reconnecting.
                        _ = try await sessions.refreshed(after: credential, refresh: refresher)
                    }
                    return .reconnect
                default:
                    continue  // a type a newer server sends (profile changes, say): not this version's concern
                }
            }
        } catch {
            throw Self.failure(error)
        }
        if Task.isCancelled { throw CancellationError() }
        return .dropped(afterConnecting: connected)
    }

    /// Opens a Server-Sent Events response through ``urlSession``: its events once the server answered 200, or its
    /// refusal.
    private func openEventStream(_ call: Call, token: String) async throws
        -> AsyncThrowingStream<ServerSentEvent, any Error>
    {
        let requestID = UUID().uuidString.lowercased()
        var request = try urlRequest(for: call, token: token, accept: "text/event-stream", requestID: requestID)
        // The longest silence before the connection counts as lost: three of the server's heartbeats.
        request.timeoutInterval = 45
        let started = ContinuousClock.now
        do {
            let (response, events) = try await EventStream.open(request, in: urlSession)
            record(call, requestID: requestID, since: started, outcome: .success(response))
            return events
        } catch {
            record(call, requestID: requestID, since: started, outcome: .failure(error))
            throw error
        }
    }
}
