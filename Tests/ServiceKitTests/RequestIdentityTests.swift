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

@Suite struct TraceparentTests {
    @Test func aStartedTraceIsWellFormedAndNewEachTime() {
        let traces = (0..<100).map { _ in Traceparent.start() }
        for trace in traces {
            #expect(Traceparent.validated(trace) == trace)
            #expect(trace.hasPrefix("00-") && trace.hasSuffix("-01"))
        }
        #expect(Set(traces).count == traces.count)
    }

    @Test func hexDigitsArePaddedLowercaseAndNeverAllZero() {
        #expect(Traceparent.hex(0xABC) == "0000000000000abc")
        #expect(Traceparent.hex(.max) == "ffffffffffffffff")
        #expect(Traceparent.hex(0x0123_4567_89AB_CDEF) == "0123456789abcdef")
        #expect(Traceparent.hex(0) == "0000000000000001")
    }

    @Test func malformedTraceparentsAreRefused() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        #expect(Traceparent.validated(valid) == valid)
        for invalid in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // uppercase
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero parent id
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",  // three parts
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  // short trace id
        ] {
            #expect(Traceparent.validated(invalid) == nil, "\(invalid)")
        }
    }

    /// A peer call continues the caller's trace: same version, trace id and flags, a new valid parent id.
    @Test func aChildKeepsTheTraceUnderANewParent() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        let children = (0..<20).map { _ in Traceparent.child(of: parent) }
        for child in children {
            #expect(Traceparent.validated(child) == child)
            #expect(child.hasPrefix("00-4bf92f3577b34da6a3ce929d0e0e4736-") && child.hasSuffix("-00"))
            #expect(!child.contains("00f067aa0ba902b7"))
        }
        #expect(Set(children).count == children.count)
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
