import RunnelTestSupport
import Testing

@testable import Runnel

/// A value whose lifetime the tests watch through a weak reference.
private final class Token: Sendable {}

/// Checks that the values an accumulating operator holds are released once its subscription
/// is disposed, or once it terminates.
@Suite struct OperatorMemoryTests {
    /// Sends a token through `apply(subject)`, then ends the subscription with `end`; returns
    /// whether the token was held before and released after.
    private func tokenLifetime(
        _ apply: (Signal<Token>) -> Signal<some Sendable>, end: (Subject<Token>, Disposable) -> Void
    ) -> (heldBefore: Bool, releasedAfter: Bool) {
        let subject = Subject<Token>()
        weak var weakToken: Token?
        var disposable: Disposable?
        do {
            let token = Token()
            weakToken = token
            disposable = ImmediateScheduler.shared.performAsCurrent { apply(subject).subscribe(next: { _ in }) }
            // Sent on a current scheduler, so bind subscribes its inner signal inline rather
            // than on a background queue that would hold the sink for a while.
            ImmediateScheduler.shared.performAsCurrent { subject.sendNext(token) }
        }
        let heldBefore = weakToken != nil
        end(subject, disposable!)
        return (heldBefore, weakToken == nil)
    }

    private static let byDisposal: @Sendable (Subject<Token>, Disposable) -> Void = { _, disposable in
        disposable.dispose()
    }
    private static let byError: @Sendable (Subject<Token>, Disposable) -> Void = { subject, _ in
        subject.sendError(TestError())
    }

    @Test func collectReleasesItsValues() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime({ $0.collect() }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func takeLastReleasesItsValues() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime({ $0.takeLast(3) }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func aggregateReleasesItsAccumulator() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime({ $0.aggregate(start: [Token]()) { $0 + [$1] } }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func scanReleasesItsAccumulator() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime({ $0.scan(start: [Token]()) { $0 + [$1] }.ignoreValues() }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func combinePreviousReleasesThePreviousValue() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime({ $0.combinePrevious(start: Token()) { _, _ in 0 } }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func bindReleasesItsBindingState() {
        for end in [Self.byDisposal, Self.byError] {
            let lifetime = tokenLifetime(
                { source in
                    source.bind { () -> (Token, inout Bool) -> Signal<Int>? in
                        var kept: [Token] = []
                        return { token, _ in
                            kept.append(token)
                            return Signal<Int>.never
                        }
                    }
                }, end: end)
            #expect(lifetime.heldBefore)
            #expect(lifetime.releasedAfter)
        }
    }

    @Test func bindReleasesCompletedInnerSubscriptions() {
        let outer = ManualSource<Int>()
        let inners = [Subject<Int>(), Subject<Int>()]
        let (recorder, _) = record(outer.signal.bind { { index, _ in inners[index] } })
        outer.send(0, 1)
        #expect(inners.map(\.subscriberCount) == [1, 1])
        inners[0].sendCompleted()
        inners[1].sendNext(5)
        #expect(recorder.values == [5])
        #expect(!recorder.isCompleted)
        #expect(inners[1].subscriberCount == 1)
        inners[1].sendCompleted()
        outer.complete()
        #expect(recorder.isCompleted)
    }
}
