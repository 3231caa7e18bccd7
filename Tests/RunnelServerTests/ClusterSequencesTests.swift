import Testing

@testable import RunnelServer

/// A node's account of other nodes' plain values (`ClusterSequences`): second copies skipped,
/// whole or in part, gaps counted once, a subject made anew starting again, and what is
/// forgotten never counted as missed.
@Suite struct ClusterSequencesTests {
    @Test func valuesInOrderAreNewAndAGapIsCountedOnce() {
        var sequences = ClusterSequences()
        #expect(sequences.receive(first: 1, count: 1, epoch: "e", origin: "a", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 2, count: 5, epoch: "e", origin: "a", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 10, count: 2, epoch: "e", origin: "a", subject: "s") == (0, 3))
        #expect(sequences.receive(first: 12, count: 1, epoch: "e", origin: "a", subject: "s") == (0, 0))
    }

    @Test func secondCopiesAreSkippedWholeOrInPart() {
        var sequences = ClusterSequences()
        #expect(sequences.receive(first: 1, count: 4, epoch: "e", origin: "a", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 1, count: 4, epoch: "e", origin: "a", subject: "s") == (4, 0))
        #expect(sequences.receive(first: 3, count: 1, epoch: "e", origin: "a", subject: "s") == (1, 0))
        #expect(sequences.receive(first: 3, count: 4, epoch: "e", origin: "a", subject: "s") == (2, 0))
        #expect(sequences.receive(first: 7, count: 1, epoch: "e", origin: "a", subject: "s") == (0, 0))
    }

    @Test func originsSubjectsAndEpochsAreCountedApart() {
        var sequences = ClusterSequences()
        #expect(sequences.receive(first: 5, count: 1, epoch: "e", origin: "a", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 1, count: 1, epoch: "e", origin: "b", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 1, count: 1, epoch: "e", origin: "a", subject: "t") == (0, 0))
        // The subject made anew on a: its numbers start again.
        #expect(sequences.receive(first: 1, count: 2, epoch: "f", origin: "a", subject: "s") == (0, 0))
        #expect(sequences.receive(first: 4, count: 1, epoch: "f", origin: "a", subject: "s") == (0, 1))
    }

    @Test func whatIsForgottenIsNeitherMissedNorSeen() {
        var sequences = ClusterSequences()
        for origin in ["a", "b"] {
            for subject in ["s", "t"] {
                _ = sequences.receive(first: 1, count: 3, epoch: "e", origin: origin, subject: subject)
            }
        }
        sequences.forget(origins: ["a"])
        #expect(sequences.receive(first: 9, count: 1, epoch: "e", origin: "a", subject: "s") == (0, 0))
        sequences.forget { $0 == "t" }
        #expect(sequences.receive(first: 9, count: 1, epoch: "e", origin: "b", subject: "t") == (0, 0))
        #expect(sequences.receive(first: 9, count: 1, epoch: "e", origin: "b", subject: "s") == (0, 5))
        #expect(sequences.receive(first: 2, count: 1, epoch: "e", origin: "a", subject: "t") == (0, 0))
    }
}
