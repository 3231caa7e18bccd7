import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelServer

/// A subscriber lagging behind a publisher on another loop pauses it there (decision 0011):
/// under `backpressure`, a subscriber over the soft limit holds its publisher's gate, which on
/// a loop the publisher is not on stands for it (`RemotePublishers`) and tells its loop
/// (`PublisherRegistry`), through the owner when neither is the owner. Loop 0 owns the
/// subjects. Cross-thread: CI runs these under the thread sanitizer.
@Suite struct SubjectReplicaPauseTests {
    /// A publisher on the owner's loop is paused by a subscriber lagging on loop 1, and
    /// resumed once it has caught up.
    @Test func aSubscriberOnAnotherLoopPausesTheOwnersPublisher() {
        let servers = Self.servers(count: 2)
        defer { servers.shutdown() }
        Self.expectPausedAndResumed(publisherOn: servers[0], by: servers[1]) {}
    }

    /// A publisher on loop 2, whose values the owner publishes, is paused by a subscriber
    /// lagging on loop 1: loop 1 tells the owner, which tells loop 2. The pause is counted on
    /// loop 2 only.
    @Test func aSubscriberPausesAPublisherOnAThirdLoopThroughTheOwner() {
        let servers = Self.servers(count: 3)
        defer { servers.shutdown() }
        Self.expectPausedAndResumed(publisherOn: servers[2], by: servers[1]) {
            #expect(Self.pausedPublishers(on: servers[0]) == 0 && Self.pausedPublishers(on: servers[1]) == 0)
        }
    }

    /// A subscriber to `s` on `lagging` whose every line stays unsent (2,000 bytes each) is put
    /// over the soft limit by the second of two values a publisher on `home` sends: the
    /// publisher is paused there (`whilePaused` runs then), and resumed once the subscriber has
    /// caught up.
    private static func expectPausedAndResumed(
        publisherOn home: LoopServer, by lagging: LoopServer, whilePaused: () -> Void
    ) {
        let subscriber = lagging.connect()
        lagging.send(subscriber, #"{"op":"sub","subject":"s","sid":"a"}"#)
        #expect(lagging.lines(of: subscriber, count: 1) == [#"{"ok":true,"sid":"a"}"#])
        lagging.run { subscriber.transport.unsentPerLine = 2000 }
        let publisher = home.connect()
        home.send(publisher, #"{"op":"pub","subject":"s","value":1}"#, #"{"op":"pub","subject":"s","value":2}"#)
        #expect(eventually { pausedPublishers(on: home) == 1 })
        // A session looks at its gate after each request: paused once it has taken one more.
        let paused = home.run {
            publisher.transport.receive(#"{"op":"pub","subject":"s","value":3}"#)
            return publisher.transport.isInputPaused
        }
        #expect(paused)
        whilePaused()
        lagging.run {
            subscriber.transport.unsentPerLine = 0
            subscriber.transport.drain()
        }
        #expect(eventually { pausedPublishers(on: home) == 0 })
        #expect(eventually { home.run { publisher.transport.isInputPaused } == false })
    }

    private static func servers(count: Int) -> LoopServers {
        LoopServers(count: count) {
            $0.slowConsumer = .backpressure
            $0.softPendingBytes = 1000
        }
    }

    private static func pausedPublishers(on server: LoopServer) -> Int {
        server.run { server.server.value.publisherPauses.pausedNow }
    }
}
