/// A FIFO buffer with an optional capacity: appending to a full buffer drops the oldest.
/// Not thread-safe; its owner guards it.
struct RingBuffer<Element> {
    private var storage: ContiguousArray<Element> = []
    private var head = 0
    let capacity: Int

    init(capacity: Int = .max) {
        precondition(capacity >= 0, "capacity must be >= 0")
        self.capacity = capacity
    }

    var count: Int { storage.count - head }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ element: Element) {
        guard capacity > 0 else { return }
        storage.append(element)
        if count > capacity { head += 1 }
        compactIfNeeded()
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        compactIfNeeded()
        return element
    }

    mutating func removeAll() {
        storage.removeAll()
        head = 0
    }

    /// The oldest element.
    var first: Element? { head < storage.count ? storage[head] : nil }

    /// The elements, oldest first.
    var elements: [Element] { Array(storage[head...]) }

    /// Drops the dead prefix once it is at least half the storage.
    private mutating func compactIfNeeded() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}
