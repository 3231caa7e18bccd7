import RunnelTestSupport
import Testing

@testable import Runnel

/// The error `apply` sends when its source sends 1 and then fails with `TestError(9)`, and
/// the values sent before it.
private func errorPath<U>(_ apply: (Signal<Int>) -> Signal<U>) -> (values: [U], error: TestError?, events: Int) {
    let (recorder, _) = record(apply(Signal.just(1).concat(Signal.error(TestError(9)))))
    return (recorder.values, recorder.error as? TestError, recorder.events.count)
}

@Suite struct MapTests {
    @Test func transformsEachValueAndCompletes() {
        let (recorder, _) = record([1, 2, 3].signal.map { "\($0 * 2)" })
        #expect(recorder.values == ["2", "4", "6"])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.map { $0 + 1 } }
        #expect(result.values == [2])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.map { $0 } }
    }
}

@Suite struct MapReplaceTests {
    @Test func replacesEachValue() {
        let (recorder, _) = record([1, 2].signal.mapReplace("x"))
        #expect(recorder.values == ["x", "x"])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.mapReplace(0) }
        #expect(result.values == [0])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.mapReplace(true) }
    }
}

@Suite struct ReduceEachTests {
    @Test func reducesPairs() {
        let (recorder, _) = record([(1, "a"), (2, "b")].signal.reduceEach { number, letter in "\(letter)\(number)" })
        #expect(recorder.values == ["a1", "b2"])
        #expect(recorder.isCompleted)
    }

    @Test func reducesTriples() {
        let (recorder, _) = record([(1, 2, 3), (4, 5, 6)].signal.reduceEach { $0 + $1 + $2 })
        #expect(recorder.values == [6, 15])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let (recorder, _) = record(Signal<(Int, Int)>.error(TestError(2)).reduceEach { $0 + $1 })
        #expect(recorder.error as? TestError == TestError(2))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [(1, 2)]) { $0.reduceEach { $0 * $1 } }
    }
}

@Suite struct ScanTests {
    @Test func sendsRunningTotals() {
        let (recorder, _) = record([1, 2, 3].signal.scan(start: 10) { $0 + $1 })
        #expect(recorder.values == [11, 13, 16])
        #expect(recorder.isCompleted)
    }

    @Test func reduceWithIndexCountsFromZero() {
        let (recorder, _) = record(
            ["a", "b", "c"].signal.scan(start: "") { running, next, index in running + next + "\(index)" })
        #expect(recorder.values == ["a0", "a0b1", "a0b1c2"])
        #expect(recorder.isCompleted)
    }

    @Test func eachSubscriptionStartsAfresh() {
        let signal = [1, 2].signal.scan(start: 0) { $0 + $1 }
        #expect(record(signal).0.values == [1, 3])
        #expect(record(signal).0.values == [1, 3])
    }

    @Test func emptySourceSendsNothing() {
        let (recorder, _) = record(Signal<Int>.empty.scan(start: 5) { $0 + $1 })
        #expect(recorder.values.isEmpty)
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.scan(start: 1) { $0 + $1 } }
        #expect(result.values == [2])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.scan(start: 0) { $0 + $1 } }
        expectDisposalReachesSource(sending: [1]) { $0.scan(start: 0) { $0 + $1 + $2 } }
    }
}

@Suite struct CombinePreviousTests {
    @Test func combinesEachValueWithThePreviousOne() {
        let (recorder, _) = record([1, 2, 3].signal.combinePrevious(start: 0) { "\($0)-\($1)" })
        #expect(recorder.values == ["0-1", "1-2", "2-3"])
        #expect(recorder.isCompleted)
    }

    @Test func passesTheError() {
        let result = errorPath { $0.combinePrevious(start: 0) { $0 + $1 } }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.combinePrevious(start: 0) { $0 + $1 } }
    }
}

@Suite struct StartWithTests {
    @Test func sendsTheValueFirst() {
        let (recorder, _) = record([1, 2].signal.startWith(0))
        #expect(recorder.values == [0, 1, 2])
        #expect(recorder.isCompleted)
    }

    @Test func sendsTheValueBeforeAnError() {
        let result = errorPath { $0.startWith(0) }
        #expect(result.values == [0, 1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.startWith(0) }
    }
}

@Suite struct AggregateTests {
    @Test func sendsTheFoldAtCompletion() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.aggregate(start: 100) { $0 + $1 })
        source.send(1, 2, 3)
        #expect(recorder.events.isEmpty)
        source.complete()
        #expect(recorder.values == [106])
        #expect(recorder.isCompleted)
    }

    @Test func emptySourceSendsTheStart() {
        let (recorder, _) = record(Signal<Int>.empty.aggregate(start: 7) { $0 + $1 })
        #expect(recorder.values == [7])
        #expect(recorder.isCompleted)
    }

    @Test func reduceWithIndexCountsFromZero() {
        let (recorder, _) = record([5, 5, 5].signal.aggregate(start: [Int]()) { $0 + [$1 * $2] })
        #expect(recorder.values == [[0, 5, 10]])
    }

    @Test func startFactoryRunsPerSubscription() {
        let made = Locked(0)
        let signal = [1, 2].signal.aggregate(
            startFactory: {
                made.withLock { $0 += 1 }
                return [Int]()
            }, reduce: { $0 + [$1] })
        #expect(made.withLock { $0 } == 0)
        #expect(record(signal).0.values == [[1, 2]])
        #expect(record(signal).0.values == [[1, 2]])
        #expect(made.withLock { $0 } == 2)
    }

    @Test func errorDropsTheFold() {
        for apply: (Signal<Int>) -> Signal<Int> in [
            { $0.aggregate(start: 0) { $0 + $1 } },
            { $0.aggregate(start: 0) { $0 + $1 + $2 } },
            { $0.aggregate(startFactory: { 0 }, reduce: { $0 + $1 }) },
        ] {
            let result = errorPath(apply)
            #expect(result.values.isEmpty)
            #expect(result.error == TestError(9))
        }
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.aggregate(start: 0) { $0 + $1 } }
        expectDisposalReachesSource(sending: [1]) { $0.aggregate(start: 0) { $0 + $1 + $2 } }
        expectDisposalReachesSource(sending: [1]) { $0.aggregate(startFactory: { 0 }, reduce: { $0 + $1 }) }
    }
}

@Suite struct CollectTests {
    @Test func sendsAllValuesAtCompletion() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(source.signal.collect())
        source.send(3, 1, 2)
        #expect(recorder.events.isEmpty)
        source.complete()
        #expect(recorder.values == [[3, 1, 2]])
        #expect(recorder.isCompleted)
    }

    @Test func emptySourceSendsAnEmptyArray() {
        let (recorder, _) = record(Signal<Int>.empty.collect())
        #expect(recorder.values == [[]])
        #expect(recorder.isCompleted)
    }

    @Test func errorDropsTheValues() {
        let result = errorPath { $0.collect() }
        #expect(result.values.isEmpty)
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.collect() }
    }
}

@Suite struct MaterializeTests {
    @Test func sendsValuesAndCompletionAsEvents() {
        let (recorder, _) = record([1, 2].signal.materialize())
        #expect(recorder.values.map(\.description) == ["next(1)", "next(2)", "completed"])
        #expect(recorder.isCompleted)
    }

    @Test func sendsTheErrorAsAValueThenCompletes() {
        let (recorder, _) = record(Signal.just(1).concat(Signal.error(TestError(3))).materialize())
        #expect(recorder.values.count == 2)
        #expect(recorder.values.last?.error as? TestError == TestError(3))
        #expect(recorder.error == nil)
        #expect(recorder.isCompleted)
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.materialize() }
    }
}

@Suite struct DematerializeTests {
    @Test func roundTripsMaterialize() {
        let (recorder, _) = record([1, 2].signal.materialize().dematerialize())
        #expect(recorder.values == [1, 2])
        #expect(recorder.isCompleted)
    }

    @Test func completedEventCompletesAndDisposesTheSource() {
        let source = ManualSource<Event<Int>>()
        let (recorder, _) = record(source.signal.dematerialize())
        source.send(.next(1), .completed)
        #expect(recorder.values == [1])
        #expect(recorder.isCompleted)
        #expect(source.isDisposed)
    }

    @Test func errorEventErrs() {
        let source = ManualSource<Event<Int>>()
        let (recorder, _) = record(source.signal.dematerialize())
        source.send(.next(1), .error(TestError(6)), .next(2))
        #expect(recorder.values == [1])
        #expect(recorder.error as? TestError == TestError(6))
        #expect(recorder.events.count == 2)
        #expect(source.isDisposed)
    }

    @Test func passesTheSourceError() {
        let (recorder, _) = record(Signal<Event<Int>>.error(TestError(8)).dematerialize())
        #expect(recorder.error as? TestError == TestError(8))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [Event<Int>.next(1)]) { $0.dematerialize() }
    }
}

@Suite struct BooleanTests {
    @Test func notNegates() {
        let (recorder, _) = record([true, false].signal.not())
        #expect(recorder.values == [false, true])
        #expect(recorder.isCompleted)
    }

    @Test func andIsTrueWhenAllAre() {
        let (recorder, _) = record([[true, true], [true, false], []].signal.and())
        #expect(recorder.values == [true, false, true])
        #expect(recorder.isCompleted)
    }

    @Test func orIsTrueWhenAnyIs() {
        let (recorder, _) = record([[false, true], [false, false], []].signal.or())
        #expect(recorder.values == [true, false, false])
        #expect(recorder.isCompleted)
    }

    @Test func passTheError() {
        #expect(record(Signal<Bool>.error(TestError(1)).not()).0.error as? TestError == TestError(1))
        #expect(record(Signal<[Bool]>.error(TestError(2)).and()).0.error as? TestError == TestError(2))
        #expect(record(Signal<[Bool]>.error(TestError(3)).or()).0.error as? TestError == TestError(3))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [true]) { $0.not() }
        expectDisposalReachesSource(sending: [[true]]) { $0.and() }
        expectDisposalReachesSource(sending: [[true]]) { $0.or() }
    }
}

@Suite struct TryMapTests {
    @Test func transformsValues() {
        let (recorder, _) = record([1, 2].signal.tryMap { $0 * 3 })
        #expect(recorder.values == [3, 6])
        #expect(recorder.isCompleted)
    }

    @Test func thrownErrorIsSentAndDisposesTheSource() {
        let source = ManualSource<Int>()
        let (recorder, _) = record(
            source.signal.tryMap { value in
                if value == 2 { throw TestError(2) }
                return value
            })
        source.send(1, 2, 3)
        #expect(recorder.values == [1])
        #expect(recorder.error as? TestError == TestError(2))
        #expect(recorder.events.count == 2)
        #expect(source.isDisposed)
    }

    @Test func passesTheSourceError() {
        let result = errorPath { $0.tryMap { $0 } }
        #expect(result.values == [1])
        #expect(result.error == TestError(9))
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.tryMap { $0 } }
    }
}

@Suite struct GroupByTests {
    /// Subscribes a recorder to each group as it is sent; returns the outer recorder and the
    /// recorders by key.
    private func recordGroups(
        _ signal: Signal<GroupedSignal<Bool, String>>
    ) -> (Recorder<GroupedSignal<Bool, String>>, Locked<[Bool: Recorder<String>]>, Disposable) {
        let groups = Locked<[Bool: Recorder<String>]>([:])
        let outer = Recorder<GroupedSignal<Bool, String>>()
        let disposable = ImmediateScheduler.shared.performAsCurrent {
            signal.map { group in
                let recorder = Recorder<String>()
                groups.withLock { $0[group.key] = recorder }
                group.subscribe(recorder)
                return group
            }.subscribe(outer)
        }
        return (outer, groups, disposable)
    }

    @Test func routesValuesToTheGroupOfTheirKey() {
        let source = ManualSource<Int>()
        let (outer, groups, _) = recordGroups(
            source.signal.groupBy(key: { $0.isMultiple(of: 2) }, transform: { "v\($0)" }))
        source.send(1, 2, 3, 4, 5)
        #expect(outer.values.map(\.key) == [false, true])
        #expect(groups.withLock { $0[false]?.values } == ["v1", "v3", "v5"])
        #expect(groups.withLock { $0[true]?.values } == ["v2", "v4"])
    }

    @Test func groupsCompleteWithTheSource() {
        let source = ManualSource<Int>()
        let (outer, groups, _) = recordGroups(source.signal.groupBy(key: { $0 > 0 }, transform: { "\($0)" }))
        source.send(1, -1)
        source.complete()
        #expect(groups.withLock { $0[true]?.isCompleted } == true)
        #expect(groups.withLock { $0[false]?.isCompleted } == true)
        #expect(outer.isCompleted)
        #expect(outer.values.allSatisfy { $0.isTerminated })
    }

    @Test func groupsErrWithTheSource() {
        let source = ManualSource<Int>()
        let (outer, groups, _) = recordGroups(source.signal.groupBy(key: { $0 > 0 }, transform: { "\($0)" }))
        source.send(1, -1)
        source.fail(TestError(4))
        let errors = groups.withLock { $0.mapValues { $0.error as? TestError } }
        #expect(errors == [true: TestError(4), false: TestError(4)])
        #expect(outer.error as? TestError == TestError(4))
    }

    @Test func groupByWithoutTransformSendsTheValues() {
        let values = Locked<[String: [Int]]>([:])
        let outer = Recorder<GroupedSignal<String, Int>>()
        ImmediateScheduler.shared.performAsCurrent {
            _ = [1, 12, 3, 14].signal.groupBy(key: { $0 < 10 ? "small" : "big" }).subscribe(
                next: { group in
                    group.subscribeNext { value in values.withLock { $0[group.key, default: []].append(value) } }
                    outer.sendNext(group)
                })
        }
        #expect(values.withLock { $0 } == ["small": [1, 3], "big": [12, 14]])
    }

    @Test func disposingDisposesTheSource() {
        expectDisposalReachesSource(sending: [1]) { $0.groupBy(key: { $0 }) }
    }
}
