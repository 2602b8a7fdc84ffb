import Contracts
import Crypto
import Foundation

/// Refresh tokens: 256 random bits, base64url. Only their SHA-256 digest is stored.
///
/// Rotation derives the next token from the presented one and a random nonce kept with the session:
/// `next = HMAC-SHA-256(key: presented, nonce)`. So a retry of the same refresh within the grace window can be given
/// the very same new token again without the token ever being stored, and the database alone (digests and nonces)
/// is not enough to compute any token.
enum RefreshTokens {
    static let byteCount = 32

    static func generate() -> String {
        RandomBytes.base64URL(count: byteCount)
    }

    static func digest(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    static func successor(of token: String, nonce: Data) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: nonce, using: SymmetricKey(data: Data(token.utf8)))
        return Data(mac).base64URLEncodedString()
    }

    /// Whether `text` has the shape of one of our tokens (cheap check before any database work).
    static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 43 && Data(base64URLEncoded: text)?.count == byteCount
    }
}
