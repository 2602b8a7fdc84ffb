import Foundation
@testable import ServiceKit
import Testing

@Suite struct RandomUUIDTests {
    @Test func randomUUIDsAreVersion4WithTheStandardVariantAndNeverRepeat() {
        let ids = (0..<1000).map { _ in UUID.random() }
        for id in ids {
            let text = id.uuidString.lowercased()
            let characters = Array(text)
            #expect(characters[14] == "4", "\(text)")  // version
            #expect("89ab".contains(characters[19]), "\(text)")  // variant 10xx
            #expect(UUID(uuidString: text) == id)
        }
        #expect(Set(ids).count == ids.count)
        #expect(RequestIDMiddleware.acceptableID(RequestIDMiddleware.newID()) != nil)
    }
}

@Suite struct BearerTokenTests {
    @Test func theTokenIsTakenFromABearerHeaderOnly() {
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "Bearer abc.def.ghi") == "abc.def.ghi")
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "bearer  abc.def ") == "abc.def")
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "BEARER\tx") == nil)  // the scheme ends at a space
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "Bearer    ") == nil)
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "Bearer") == nil)
        #expect(AuthenticationMiddleware.bearerToken(fromHeader: "Basic dXNlcjpwYXNz") == nil)
    }
}
