import OpenCombine
import Runnel

/// Sendable counter for Runnel's `@Sendable` blocks. The benchmarks send from one thread;
/// the class only satisfies the compiler.
final class Counter: @unchecked Sendable {
    var total = 0
}

let runs = 5

/// (a) 1,000,000 sends into a subject with one subscriber.
func subjectSends() -> CaseResult {
    let count = 1_000_000
    let runnel = bestOf(runs) {
        let subject = Runnel.Subject<Int>()
        let counter = Counter()
        let subscription = ImmediateScheduler.shared.performAsCurrent {
            subject.subscribeNext { counter.total &+= $0 }
        }
        for i in 0..<count { subject.sendNext(i) }
        subscription.dispose()
        consume(counter.total)
    }
    let openCombine = bestOf(runs) {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let counter = Counter()
        let cancellable = subject.sink { counter.total &+= $0 }
        for i in 0..<count { subject.send(i) }
        cancellable.cancel()
        consume(counter.total)
    }
    return CaseResult(
        name: "subject 1M sends, 1 subscriber", events: count, runnelNanoseconds: runnel,
        openCombineNanoseconds: openCombine)
}

/// (b) 100,000 values through six rounds of map + filter (12 operators).
func mapFilterChain() -> CaseResult {
    let count = 100_000
    let runnel = bestOf(runs) {
        var signal = Runnel.Signal<Int>.from(0..<count)
        for _ in 0..<6 {
            signal = signal.map { $0 &+ 1 }.filter { $0 >= 0 }
        }
        let counter = Counter()
        ImmediateScheduler.shared.performAsCurrent {
            _ = signal.subscribeNext { counter.total &+= $0 }
        }
        consume(counter.total)
    }
    let openCombine = bestOf(runs) {
        var publisher = (0..<count).publisher.eraseToAnyPublisher()
        for _ in 0..<6 {
            publisher = publisher.map { $0 &+ 1 }.filter { $0 >= 0 }.eraseToAnyPublisher()
        }
        let counter = Counter()
        let cancellable = publisher.sink { counter.total &+= $0 }
        cancellable.cancel()
        consume(counter.total)
    }
    return CaseResult(
        name: "100k values, 6 x (map + filter)", events: count, runnelNanoseconds: runnel,
        openCombineNanoseconds: openCombine)
}

/// (c) 10,000 subscribe + dispose cycles of a map/filter chain on a live subject.
func subscribeDisposeCycles() -> CaseResult {
    let count = 10_000
    let runnel = bestOf(runs) {
        let subject = Runnel.Subject<Int>()
        let chain = subject.map { $0 &+ 1 }.filter { $0 >= 0 }
        let counter = Counter()
        ImmediateScheduler.shared.performAsCurrent {
            for _ in 0..<count {
                let subscription = chain.subscribeNext { counter.total &+= $0 }
                subscription.dispose()
            }
        }
        consume(counter.total &+ subject.subscriberCount)
    }
    let openCombine = bestOf(runs) {
        let subject = OpenCombine.PassthroughSubject<Int, Never>()
        let chain = subject.map { $0 &+ 1 }.filter { $0 >= 0 }
        let counter = Counter()
        for _ in 0..<count {
            let cancellable = chain.sink { counter.total &+= $0 }
            cancellable.cancel()
        }
        consume(counter.total)
    }
    return CaseResult(
        name: "10k subscribe + dispose, map/filter", events: count, runnelNanoseconds: runnel,
        openCombineNanoseconds: openCombine)
}

/// Runs the three cases and prints a table: ns per event, best of five runs.
func runLibraryBenchmarks() {
    print("Runnel vs OpenCombine, ns per event, best of \(runs) runs")
    print(pad("case", 38) + pad("Runnel", 10) + pad("OpenCombine", 13) + "ratio")
    var results: [CaseResult] = []
    // `RunnelLibraryBench a` (or b, c) runs one case, for profiling.
    let cases = [("a", subjectSends), ("b", mapFilterChain), ("c", subscribeDisposeCycles)]
    let only = CommandLine.arguments.dropFirst().first
    for (key, make) in cases where only == nil || only == key {
        let result = make()
        results.append(result)
        print(
            pad(result.name, 38) + pad(format(result.runnelPerEvent), 10) + pad(format(result.openCombinePerEvent), 13)
                + format(result.ratio, decimals: 2))
    }
    guard let chain = results.first(where: { $0.name.hasPrefix("100k") }) else { return }
    print("case (b): Runnel \(format(chain.runnelPerEvent / 12, decimals: 2)) ns per operator per value")
}
