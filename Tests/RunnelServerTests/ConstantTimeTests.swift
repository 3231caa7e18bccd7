import RunnelCrypto
import Testing

@testable import RunnelServer

/// The auth token comparison: right answers, and no early exit on length or on a difference.
@Suite struct ConstantTimeTests {
    private func equals(_ given: String, _ secret: String) -> Bool {
        ConstantTime.equals(Array(given.utf8), Array(secret.utf8))
    }

    @Test func equalTokensMatchAndEveryKindOfDifferenceDoesNot() {
        #expect(equals("s3cret-token", "s3cret-token"))
        #expect(!equals("s3cret-tokeN", "s3cret-token"))
        #expect(!equals("X3cret-token", "s3cret-token"))
        #expect(!equals("s3cret", "s3cret-token"))
        #expect(!equals("s3cret-token-and-more", "s3cret-token"))
        // A guess that is the secret repeated agrees with it byte for byte; only the lengths differ.
        #expect(!equals("abcabc", "abc"))
        #expect(!equals("", "abc"))
        #expect(equals("", ""))
        #expect(!equals("a", ""))
        #expect(equals("é✓", "é✓"))
    }

    /// The loop must read every byte of the guess whatever it holds: a difference anywhere,
    /// first byte or last, gives the same answer as a difference everywhere, and a long guess
    /// against a short secret (the secret's bytes reused) is still compared to its end.
    @Test func aDifferenceAtAnyPositionIsFound() {
        let secret = [UInt8](repeating: 0x41, count: 64)
        for position in 0..<80 {
            var guess = [UInt8](repeating: 0x41, count: 80)
            guess[position] = 0x42
            #expect(!ConstantTime.equals(guess, secret))
            if position < 64 { #expect(!ConstantTime.equals(Array(guess.prefix(64)), secret)) }
        }
        #expect(ConstantTime.equals(secret, secret))
    }
}
