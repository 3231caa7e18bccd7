import RunnelTestSupport
import Testing

@testable import Runnel

/// What `apply` sends when its source sends 1 and then fails with `TestError(9)`.
private func errorPath<U>(_ apply: (Signal<Int>) -> Signal<U>) -> (values: [U], error: TestError?) {
    let (recorder, _) = record(apply(Signal.just(1).concat(Signal.error(TestError(9)))))
    return (recorder.values, recorder.error as? TestError)
}

@Suite struct FilterTests {
    @Test func sendsOnlyIncludedValues() {
        let (recorder, _) = record([1, 2, 3, 4].signal.filter { $0.isMultiple(of: 2) })
        #expect(recorder.values == [2, 4])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.filter { _ in true } }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.filter { _ in true } }
    }
}

@Suite struct TryFilterTests {
    @Test func sendsOnlyIncludedValues() {
        let (recorder, _) = record([1, 2, 3, 4].signal.tryFilter { $0.isMultiple(of: 2) })
        #expect(recorder.values == [2, 4])
        #expect(recorder.isCompleted)
    }

    @Test func thrownErrorIsSentInsteadAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(
            source.signal.tryFilter { value in
                if value == 3 { throw TestError(3) }
                return value != 2
            })
        source.send(1, 2, 3, 4)
        #expect(recorder.values == [1])
        #expect(recorder.error as? TestError == TestError(3))
        #expect(recorder.events.count == 2)
        #expect(source.isDisposed)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.tryFilter { _ in true } }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.tryFilter { _ in true } }
    }
}

@Suite struct IgnoreTests {
    @Test func dropsEqualValues() {
        let (recorder, _) = record([1, 2, 1, 3].signal.ignore(1))
        #expect(recorder.values == [2, 3])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.ignore(1) }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [2]) { $0.ignore(1) }
    }
}

@Suite struct IgnoreValuesTests {
    @Test func sendsOnlyCompletion() {
        let (recorder, _) = record([1, 2].signal.ignoreValues())
        #expect(recorder.events.count == 1)
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.ignoreValues() }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.ignoreValues() }
    }
}

@Suite struct DistinctUntilChangedTests {
    @Test func dropsRepeats() {
        let (recorder, _) = record([1, 1, 2, 2, 2, 1, 3, 3].signal.distinctUntilChanged())
        #expect(recorder.values == [1, 2, 1, 3])
        #expect(recorder.isCompleted)
    }

    @Test func eachSubscriptionSendsItsFirstValue() {
        let signal = [4, 4].signal.distinctUntilChanged()
        #expect(record(signal).0.values == [4])
        #expect(record(signal).0.values == [4])
    }

    @Test func passesTheError() {
        let result = errorPath { $0.distinctUntilChanged() }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.distinctUntilChanged() }
    }
}

@Suite struct SkipTests {
    @Test func dropsTheFirstValues() {
        let (recorder, _) = record([1, 2, 3, 4].signal.skip(2))
        #expect(recorder.values == [3, 4])
        #expect(recorder.isCompleted)
    }

    @Test func skippingMoreThanThereAreCompletes() {
        let (recorder, _) = record([1, 2].signal.skip(5))
        #expect(recorder.values.isEmpty)
        #expect(recorder.isCompleted)
    }

    @Test func skipZeroSendsAll() {
        #expect(record([1, 2].signal.skip(0)).0.values == [1, 2])
    }

    @Test func passesTheError() {
        let result = errorPath { $0.skip(1) }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.skip(1) }
    }
}

@Suite struct TakeTests {
    @Test func sendsTheFirstValuesThenCompletesAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.take(2))
        source.send(1, 2)
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
        source.sendToAll([3])
        #expect(recorder.events.count == 3)
    }

    @Test func takeZeroCompletesAtOnceWithoutSubscribing() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.take(0))
        #expect(recorder.events.count == 1)
        #expect(recorder.isCompleted)
        #expect(source.subscribeCount == 0)
    }

    @Test func completesWhenTheSourceEndsFirst() {
        let (recorder, _) = record([1].signal.take(3))
        #expect(recorder.values == [1])
        #expect(recorder.isCompleted)
    }

    @Test func stopsAnInfiniteSynchronousSource() {
        let (recorder, _) = record((0...).signal.take(3))
        #expect(recorder.values == [0, 1, 2])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.take(5) }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.take(5) }
    }
}

@Suite struct TakeLastTests {
    @Test func sendsTheLastValuesAtCompletion() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.takeLast(2))
        source.send(1, 2, 3, 4)
        #expect(recorder.events.isEmpty)
        source.complete()
        #expect(recorder.values == [3, 4])
        #expect(recorder.isCompleted)
    }

    @Test func sendsAllWhenThereAreFewer() {
        let (recorder, _) = record([1].signal.takeLast(3))
        #expect(recorder.values == [1])
        #expect(recorder.isCompleted)
    }

    @Test func takeLastZeroOnlyCompletes() {
        let (recorder, _) = record([1, 2].signal.takeLast(0))
        #expect(recorder.events.count == 1)
        #expect(recorder.isCompleted)
    }

    @Test func errorDropsTheValues() {
        let result = errorPath { $0.takeLast(2) }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.takeLast(2) }
    }
}

@Suite struct TakeUntilPredicateTests {
    @Test func completesAtTheFirstMatchWithoutSendingIt() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.take(until: { $0 > 2 }))
        source.send(1, 2, 3, 1)
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    @Test func completesWithTheSource() {
        let (recorder, _) = record([1, 2].signal.take(until: { _ in false }))
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
    }

    @Test func takeWhileStopsAtTheFirstFailure() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.take(while: { $0 < 3 }))
        source.send(1, 2, 3, 1)
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    @Test func passesTheError() {
        var result = errorPath { $0.take(until: { _ in false }) }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
        result = errorPath { $0.take(while: { _ in true }) }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.take(until: { _ in false }) }
        expectDisposalReachesSource(sending: [1]) { $0.take(while: { _ in true }) }
    }
}

@Suite struct SkipUntilPredicateTests {
    @Test func sendsFromTheFirstMatchOn() {
        let (recorder, _) = record([1, 2, 5, 1, 6].signal.skip(until: { $0 > 4 }))
        #expect(recorder.values == [5, 1, 6])
        #expect(recorder.isCompleted)
    }

    @Test func skipWhileSendsFromTheFirstFailureOn() {
        let (recorder, _) = record([1, 2, 5, 1, 6].signal.skip(while: { $0 < 4 }))
        #expect(recorder.values == [5, 1, 6])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        var result = errorPath { $0.skip(until: { _ in false }) }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
        result = errorPath { $0.skip(while: { _ in false }) }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.skip(until: { _ in true }) }
        expectDisposalReachesSource(sending: [1]) { $0.skip(while: { _ in true }) }
    }
}

@Suite struct AnyAllTests {
    @Test func anySendsTrueAtTheFirstValueAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.any())
        source.send(7, 8)
        #expect(recorder.values == [true])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    @Test func anyOnEmptySendsFalse() {
        let (recorder, _) = record(Signal<Int>.empty.any())
        #expect(recorder.values == [false])
        #expect(recorder.isCompleted)
    }

    @Test func anyPredicateLooksForAMatch() {
        #expect(record([1, 2, 3].signal.any { $0 == 2 }).0.values == [true])
        #expect(record([1, 3].signal.any { $0 == 2 }).0.values == [false])
    }

    @Test func allIsTrueWhenEveryValuePasses() {
        let (recorder, _) = record([2, 4].signal.all { $0.isMultiple(of: 2) })
        #expect(recorder.values == [true])
        #expect(recorder.isCompleted)
    }

    @Test func allOnEmptyIsTrue() {
        let (recorder, _) = record(Signal<Int>.empty.all { _ in false })
        #expect(recorder.values == [true])
        #expect(recorder.isCompleted)
    }

    @Test func allSendsFalseAtTheFirstFailureAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.all { $0 < 3 })
        source.send(1, 5, 2)
        #expect(recorder.values == [false])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    /// ReactiveCocoa 2.5 turns a source error into `false` for both.
    @Test func anErrorGivesFalse() {
        let any = record(Signal<Int>.error(TestError()).any())
        #expect(any.0.values == [false])
        #expect(any.0.error == nil)
        #expect(any.0.isCompleted)
        let all = record(Signal<Int>.error(TestError()).all { _ in true })
        #expect(all.0.values == [false])
        #expect(all.0.error == nil)
        #expect(all.0.isCompleted)
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.any { _ in false } }
        expectDisposalReachesSource(sending: [1]) { $0.all { _ in true } }
    }
}

@Suite struct TryTests {
    @Test func passesValuesWhileTheBlockSucceeds() {
        let seen = Locked<[Int]>([])
        let (recorder, _) = record([1, 2].signal.try { value in seen.withLock { $0.append(value) } })
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
        #expect(seen.withLock { $0 } == [1, 2])
    }

    @Test func thrownErrorIsSentAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.try { if $0 == 2 { throw TestError(2) } })
        source.send(1, 2, 3)
        #expect(recorder.values == [1])
        #expect(recorder.error as? TestError == TestError(2))
        #expect(recorder.events.count == 2)
        #expect(source.isDisposed)
    }

    @Test func passesTheSourceError() {
        let result = errorPath { $0.try { _ in } }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.try { _ in } }
    }
}
