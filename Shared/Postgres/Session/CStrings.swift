import CLibpq
import Foundation
import PostgresValues

/// A NUL would silently truncate the C string, and PostgreSQL text cannot hold one anyway.
private let nulInParameter = PostgresError.client("a parameter contains a NUL character, which PostgreSQL text cannot hold")

/// Throws what ``withCStrings(_:_:)`` would throw for `strings`, without copying them.
func requireNoNUL(_ strings: [String?]) throws {
    for case var string? in strings {
        let hasNUL = string.withUTF8 { utf8 in utf8.baseAddress.map { memchr($0, 0, utf8.count) != nil } ?? false }
        if hasNUL { throw nulInParameter }
    }
}

/// `[String?]` as a `const char * const *` valid inside `body`; `nil` becomes a NULL pointer (SQL NULL).
/// The strings are copied, NUL-terminated, into one scratch buffer (on the stack when small): a statement's
/// parameters cost no allocation of their own.
func withCStrings<Result>(
    _ strings: [String?],
    _ body: (UnsafePointer<UnsafePointer<CChar>?>?) throws -> Result
) throws -> Result {
    let byteCount = strings.reduce(0) { $0 + ($1.map { $0.utf8.count + 1 } ?? 0) }
    return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(byteCount, 1)) { bytes in
        try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: max(strings.count, 1)) { pointers in
            var offset = 0
            for (index, string) in strings.enumerated() {
                guard var string else {
                    pointers[index] = nil
                    continue
                }
                let target = bytes.baseAddress! + offset
                let copied = string.withUTF8 { utf8 -> Bool in
                    guard let source = utf8.baseAddress else { return true }
                    guard memchr(source, 0, utf8.count) == nil else { return false }
                    target.update(from: source, count: utf8.count)
                    return true
                }
                guard copied else { throw nulInParameter }
                offset += string.utf8.count
                bytes[offset] = 0
                offset += 1
                pointers[index] = UnsafeRawPointer(target).assumingMemoryBound(to: CChar.self)
            }
            return try body(UnsafePointer(pointers.baseAddress))
        }
    }
}
