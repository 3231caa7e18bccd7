/// Comparing a secret with a guess in time that does not tell how much of the guess was right.
package enum ConstantTime {
    /// Whether `given` equals `secret`.
    ///
    /// A comparison that stops at the first differing byte answers sooner the worse the guess,
    /// which lets a client time its way to a token byte by byte. Here the loop runs over every
    /// byte of `given` (whose length the client chose, so it tells nothing) and never exits
    /// early: each byte is XORed with the secret's byte at the same position (the secret
    /// repeated when `given` is longer) and the differences are ORed together, with the
    /// lengths' difference folded in the same way. Neither the secret's length nor where the
    /// bytes differ changes the work done.
    package static func equals(_ given: [UInt8], _ secret: [UInt8]) -> Bool {
        guard !secret.isEmpty else { return given.isEmpty }
        var difference = UInt64(truncatingIfNeeded: given.count ^ secret.count)
        given.withUnsafeBufferPointer { guess in
            secret.withUnsafeBufferPointer { key in
                for index in 0..<guess.count {
                    difference |= UInt64(guess[index] ^ key[index % key.count])
                }
            }
        }
        return difference == 0
    }
}
