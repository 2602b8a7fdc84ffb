import Foundation

/// Tokens and page cursors travel as base64url. Package-wide only: an app that imports the client keeps its own
/// names for Foundation types.
package extension Data {
    /// Decodes unpadded base64url (RFC 4648 §5), as JOSE uses it.
    init?(base64URLEncoded text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !base64.contains("=") else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }

    /// Unpadded base64url, as JOSE uses it.
    func base64URLEncodedString() -> String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
