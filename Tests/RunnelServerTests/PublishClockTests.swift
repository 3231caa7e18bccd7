import RunnelUV
import Testing

@testable import RunnelServer

/// The system's publish clock (`SystemPublishClock`) bound to a loop: one reading for all a
/// callback of the loop publishes, a new one in the next callback.
@Suite struct PublishClockTests {
    @Test func aCallbackPublishesWithOneReadingAndTheNextReadsAgain() {
        let loop = EventLoop()
        loop.start(name: "publish-clock-test")
        defer { _ = loop.shutdown() }
        let clock = UnsafeTransfer(SystemPublishClock(readOncePerCallbackOf: loop.scheduler))
        let readings = runJob(on: loop) { () -> [Int64] in
            let first = clock.value.now()
            // The system's clock passes the reading's millisecond (within one, spent here).
            let unbound = SystemPublishClock()
            while unbound.now() <= first {}
            return [first, clock.value.now()]
        }
        #expect(readings[1] == readings[0], "read again within one callback")
        let next = runJob(on: loop) { clock.value.now() }
        #expect(next > readings[0], "the next callback kept the last one's reading")
    }

    /// A clock with no loop reads the system's at every call.
    @Test func withoutALoopEveryCallReads() {
        let clock = SystemPublishClock()
        let first = clock.now()
        let unbound = SystemPublishClock()
        while unbound.now() <= first {}
        #expect(clock.now() > first)
    }
}
