import Contracts
import Crypto
import Foundation

/// What a mailed link lets its holder do.
enum LinkPurpose: String, Sendable, CaseIterable {
    case passwordReset = "password-reset"
    case emailVerification = "email-verification"
}

/// The token of a mailed link: the account's id and 256 random bits, base64url (64 characters).
///
/// Only a SHA-256 digest of the secret is stored, one per account and purpose, so a newer link replaces the last one
/// and a copy of the database opens no account. The id finds the one row to compare with; a token whose id part was
/// changed (or taken from another account's link) finds a digest it does not match.
struct LinkToken: Sendable, Equatable {
    let accountID: UUID
    let secret: Data

    static let secretByteCount = 32
    private static let byteCount = 16 + secretByteCount

    static func generate(for accountID: UUID) -> LinkToken {
        LinkToken(accountID: accountID, secret: RandomBytes.data(count: secretByteCount))
    }

    private init(accountID: UUID, secret: Data) {
        self.accountID = accountID
        self.secret = secret
    }

    /// The token of a link, or nil when `text` cannot be one of ours (checked before any database work).
    init?(text: String) {
        guard text.utf8.count == 64, let bytes = Data(base64URLEncoded: text), bytes.count == Self.byteCount else {
            return nil
        }
        let id = bytes.prefix(16)
        accountID = id.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        secret = bytes.suffix(Self.secretByteCount)
    }

    var text: String {
        var bytes = withUnsafeBytes(of: accountID.uuid) { Data($0) }
        bytes.append(secret)
        return bytes.base64URLEncodedString()
    }

    var digest: Data { Data(SHA256.hash(data: secret)) }

    /// A stored token of the account, as the check reads it.
    struct Stored: Sendable {
        var digest: Data
        var expiresAt: Date
    }

    enum Check: Equatable {
        case valid, expired, invalid
    }

    /// Whether this token opens `stored` at `now`. The digests are compared in constant time: how long a wrong guess
    /// takes says nothing about how close it was.
    func check(against stored: Stored?, now: Date) -> Check {
        guard let stored, stored.digest.count == digest.count else { return .invalid }
        let difference = zip(stored.digest, digest).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) }
        guard difference == 0 else { return .invalid }
        return stored.expiresAt > now ? .valid : .expired
    }
}
