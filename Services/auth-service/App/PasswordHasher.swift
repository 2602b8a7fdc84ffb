import Contracts
import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ServiceKit
import HummingbirdBcrypt
import NIOCore
import NIOPosix

/// bcrypt, run on a thread pool so that a burst of sign-ins queues there instead of stalling the async executors
/// that serve every other request.
///
/// New hashes (sign-up, a password change or reset) and checks (sign-in, re-confirming a password) go through
/// ``AdmissionQueue``s of their own: new hashes run on threads of their own (half the cores) at a lower CPU priority,
/// with a short line, so sign-ups, however many, never stand between a sign-in and a thread or a core; past either
/// line the request is refused at once with ``AuthRefusal/busy`` (503) instead of waiting without end.
///
/// Passwords are pre-hashed before bcrypt (see ``prehash(_:)``), so bcrypt never sees more than 44 bytes and
/// nothing past its 72-byte limit is silently ignored.
struct PasswordHasher: Sendable {
    let cost: Int
    let threadPool: NIOThreadPool
    /// The hash of a random password, checked when the email is unknown: a miss costs the same as a wrong password,
    /// so response times do not reveal which emails have accounts.
    private let decoyHash: String
    private let newHashes: AdmissionQueue
    private let checks: AdmissionQueue

    /// How many hashes and checks may wait for a thread before more are refused.
    struct Lines: Sendable {
        var newHashes: Int
        var checks: Int
        static let standard = Lines(newHashes: 4, checks: 64)
    }

    static func make(cost: Int, lines: Lines = .standard, threads: Int = System.coreCount,
                     threadPool: NIOThreadPool = .singleton) async throws -> PasswordHasher {
        let decoy = RandomBytes.base64URL(count: 24)
        let hash = try await threadPool.runIfActive { Bcrypt.hash(prehash(decoy), cost: UInt8(cost)) }
        return PasswordHasher(
            cost: cost, threadPool: threadPool, decoyHash: hash,
            newHashes: AdmissionQueue(concurrency: newHashThreadCount, lineLength: lines.newHashes),
            checks: AdmissionQueue(concurrency: threads, lineLength: lines.checks))
    }

    /// Throws ``AuthRefusal/busy`` when a new hash would be refused now, so that a request refused anyway costs
    /// no database work first (``hash(_:)`` still decides).
    func requireRoomForNewHash() throws {
        if newHashes.isFull { throw AuthRefusal.busy }
    }

    func hash(_ password: String) async throws -> String {
        let cost = UInt8(cost)
        return try await admitted(newHashes) {
            try await Self.newHashThreads.runIfActive {
                Self.lowerThisThreadsPriority()
                return Bcrypt.hash(Self.prehash(password), cost: cost)
            }
        }
    }

    /// Whether `password` matches `storedHash`; with no stored hash (unknown email) it spends the same time and
    /// answers false.
    func verify(_ password: String, against storedHash: String?) async throws -> Bool {
        let target = storedHash ?? decoyHash
        let matches = try await admitted(checks) {
            try await threadPool.runIfActive { Bcrypt.verify(Self.prehash(password), hash: target) }
        }
        return matches && storedHash != nil
    }

    /// Half the cores: the other half are always there for sign-ins.
    private static let newHashThreadCount = max(1, System.coreCount / 2)

    /// The threads new hashes run on, for every hasher of the process (tests build many), started once.
    private static let newHashThreads: NIOThreadPool = {
        let pool = NIOThreadPool(numberOfThreads: newHashThreadCount)
        pool.start()
        return pool
    }()

    /// nice 10 for the calling thread (on Linux a thread's own: `setpriority` with `who` 0 changes the caller alone),
    /// so that a core both want goes to sign-ins and to serving requests first. Lowering needs no privilege, and a
    /// thread of ``newHashThreads`` only ever lowers it, to the same value.
    private static func lowerThisThreadsPriority() {
        #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        #endif
    }

    private func admitted<Result: Sendable>(_ queue: AdmissionQueue, _ work: () async throws -> Result)
        async throws -> Result {
        do {
            return try await queue.run(work)
        } catch is AdmissionQueue.Full {
            throw AuthRefusal.busy
        }
    }

    /// HMAC-SHA-256 of the NFC-normalized password, base64: the same password typed on two keyboards matches, any
    /// length stays meaningful, and the fixed key keeps a digest leaked from some other site's plain SHA-256 table
    /// from being tried against our bcrypt hashes ("password shucking").
    static func prehash(_ password: String) -> String {
        let digest = HMAC<SHA256>.authenticationCode(
            for: Data(password.precomposedStringWithCanonicalMapping.utf8), using: prehashKey
        )
        return Data(digest).base64EncodedString()
    }

    private static let prehashKey = SymmetricKey(data: Data("favoriteme-password-prehash-v1".utf8))
}
