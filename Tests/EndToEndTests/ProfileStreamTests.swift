import Contracts
import Foundation
import NIOHTTP1
import Testing

extension EndToEnd {
    /// A user's profile followed by every device: a change made on one arrives on the others' change streams.
    @Suite(.timeLimit(.minutes(1))) struct ProfileStreamTests {
        /// Two devices of one user (two sessions): the tablet follows its stream, the phone changes the experience and
        /// the display name; the tablet's stream brings the change, as `GET /v1/auth/me` now has it, without an id.
        @Test func aChangeOfExperienceOnOneDeviceArrivesOnTheOtherDevicesStream() async throws {
            let stack = try StackUnderTest.required()
            let anonymous = StackClient(stack.gateway)
            let email = uniqueEmail("profile-stream")
            let phoneSession = try await anonymous.send(.POST, "/v1/auth/signup", json: SignUpRequest(
                email: email, password: accountPassword, experience: ExperienceID.mobiles.rawValue))
                .decode(AuthSession.self)
            let tabletSession = try await anonymous.send(.POST, "/v1/auth/login", json: SignInRequest(
                email: email, password: accountPassword, deviceName: "tablet")).decode(AuthSession.self)
            #expect(tabletSession.sessionId != phoneSession.sessionId)
            let tablet = try await ServerSentEvents.open(stack.gateway, token: tabletSession.accessToken)
            #expect(tablet.status == .ok)
            #expect(await tablet.next()?.type == "ready")

            let phone = anonymous.with(token: phoneSession.accessToken)
            let changed = try await phone.send(.PATCH, "/v1/auth/me", json: ProfileUpdate(
                experience: ExperienceID.bestsellers.rawValue, displayName: "Ana")).decode(UserProfile.self)
            #expect(changed.experience == .bestsellers)

            var event: ServerSentEvents.Event?
            while let next = await tablet.next() {
                if next.type == "profile" { event = next; break }
            }
            tablet.close()
            let profile = try #require(event, "the tablet's stream ended without the profile change")
            #expect(profile.id == nil)  // no position in the log of favorites
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let change = try decoder.decode(ProfileChange.self, from: Data(profile.data.utf8))
            #expect(change.userId == changed.id && change.version == 1)
            #expect(change.experience == .bestsellers && change.displayName == "Ana")
            #expect(change.preferences == changed.preferences)
        }
    }
}
