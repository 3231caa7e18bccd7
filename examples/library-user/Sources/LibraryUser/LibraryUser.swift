import Runnel

/// A few of the library's promises, printed one per line for the script to compare:
/// cold signals and operators, a replay subject, and time on a virtual-time scheduler.
/// Thread rules: runs on the calling thread; every subscription is made with a scheduler
/// current, so it is synchronous.
enum LibraryUser {
    static func run() {
        let scheduler = TestScheduler()
        scheduler.performAsCurrent {
            // A cold signal through filter and map.
            let tens = (try? Signal.from(1...6).filter { $0 % 2 == 0 }.map { $0 * 10 }.toArray()) ?? []
            print("filter+map:", tens)

            // A replay subject keeps its last two values for a late subscriber.
            let deploys = ReplaySubject<String>(capacity: 2)
            for version in ["v1", "v2", "v3"] { deploys.sendNext(version) }
            deploys.sendCompleted()
            print("replayed:", (try? deploys.toArray()) ?? [])
        }

        // throttle on virtual time: only the newest value of a burst, a second later.
        let readings = Subject<Int>()
        let seen = Seen()
        scheduler.performAsCurrent {
            readings.throttle(.seconds(1), on: scheduler).subscribeNext { seen.append($0) }
            for reading in 1...3 { readings.sendNext(reading) }
        }
        print("throttled before:", seen.values)
        scheduler.advance(by: .seconds(1))
        print("throttled after:", seen.values)
    }
}

/// The values a subscriber saw. Thread rules: one thread (the virtual-time scheduler's caller).
final class Seen: @unchecked Sendable {
    private(set) var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}
