import Contracts
import Foundation

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
