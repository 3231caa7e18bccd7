import Runnel
import RunnelTestSupport
import RunnelUV
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension RunnelUVTests {
    @Suite struct PosixSignalTests {
        @Test func sighupRaisedInTheProcessArrivesAsAValue() {
            let loop = EventLoop.started()
            let received = Shared<[Int32]>([])
            let sawLoop = Shared(false)
            let scheduler = loop.scheduler
            // Subscribing with the loop as current scheduler queues the handler installation
            // now, so the raise queued after it finds the handler in place.
            let subscription = scheduler.performAsCurrent {
                loop.signals([SIGHUP, SIGTERM]).subscribeNext { number in
                    sawLoop.withLock { $0 = currentScheduler === scheduler }
                    received.withLock { $0.append(number) }
                }
            }
            scheduler.schedule { _ = raise(SIGHUP) }
            #expect(eventually { received.current == [SIGHUP] })
            scheduler.schedule { _ = kill(getpid(), SIGHUP) }
            #expect(eventually { received.current == [SIGHUP, SIGHUP] })
            #expect(sawLoop.current)
            subscription.dispose()
            #expect(eventually { onLoop(loop) { scheduler.liveHandleOwners } == 0 })
            #expect(loop.shutdown() == 0)
        }

        @Test func disposingBeforeInstallationInstallsNothing() {
            let loop = EventLoop()
            let subscription = loop.scheduler.performAsCurrent { loop.signals([SIGHUP]).subscribeNext { _ in } }
            subscription.dispose()
            loop.start()
            #expect(onLoop(loop) { loop.scheduler.liveHandleOwners } == 0)
            #expect(loop.shutdown() == 0)
        }
    }
}
