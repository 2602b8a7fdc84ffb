import Crypto
import Foundation
import ServiceKit
import HummingbirdBcrypt
import NIOPosix

/// bcrypt, run on a thread pool so that a burst of sign-ins queues there instead of stalling the async executors
/// that serve every other request.
///
/// Passwords are pre-hashed before bcrypt (see ``prehash(_:)``), so bcrypt never sees more than 44 bytes and
/// nothing past its 72-byte limit is silently ignored.
struct PasswordHasher: Sendable {
    let cost: Int
    let threadPool: NIOThreadPool
    /// The hash of a random password, checked when the email is unknown: a miss costs the same as a wrong password,
    /// so response times do not reveal which emails have accounts.
    private let decoyHash: String

    static func make(cost: Int, threadPool: NIOThreadPool = .singleton) async throws -> PasswordHasher {
        let decoy = RandomBytes.base64URL(count: 24)
        let hash = try await threadPool.runIfActive { Bcrypt.hash(prehash(decoy), cost: UInt8(cost)) }
        return PasswordHasher(cost: cost, threadPool: threadPool, decoyHash: hash)
    }

    func hash(_ password: String) async throws -> String {
        let cost = UInt8(cost)
        return try await threadPool.runIfActive { Bcrypt.hash(Self.prehash(password), cost: cost) }
    }

    /// Whether `password` matches `storedHash`; with no stored hash (unknown email) it spends the same time and
    /// answers false.
    func verify(_ password: String, against storedHash: String?) async throws -> Bool {
        let target = storedHash ?? decoyHash
        let matches = try await threadPool.runIfActive { Bcrypt.verify(Self.prehash(password), hash: target) }
        return matches && storedHash != nil
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

/// Cryptographically secure random bytes (the system generator reads the kernel's CSPRNG).
enum RandomBytes {
    static func data(count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    static func base64URL(count: Int) -> String {
        data(count: count).base64URLEncodedString()
    }
}
