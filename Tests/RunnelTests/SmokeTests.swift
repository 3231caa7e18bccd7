import Testing

@testable import Runnel

@Suite struct SmokeTests {
    @Test func justDeliversValueThenCompletes() {
        let values = Locked<[Int]>([])
        let done = Locked(false)
        ImmediateScheduler.shared.performAsCurrent {
            Signal.just(3).subscribe(
                next: { v in values.withLock { $0.append(v) } }, completed: { done.withLock { $0 = true } })
        }
        #expect(values.withLock { $0 } == [3])
        #expect(done.withLock { $0 })
    }
}
