/// The streams' deadlines in an indexed binary min-heap: at most one entry per stream index,
/// moved in place when its deadline changes, so a turn finds the expired streams in O(log n)
/// each instead of looking at every stream, and nothing grows after `init` (the heap and the
/// positions are sized for every index once). Deadlines are absolute, on `MonotonicClock`.
final class StreamDeadlines {
    /// Stream indices, heap-ordered by `deadlines`.
    private let heap: UnsafeMutablePointer<Int32>
    /// Each index's position in `heap`, -1 when it has no deadline.
    private let positions: UnsafeMutablePointer<Int32>
    private let deadlines: UnsafeMutablePointer<UInt64>
    private(set) var count = 0

    init(limit: Int) {
        let capacity = max(limit, 1)
        heap = .allocate(capacity: capacity)
        positions = .allocate(capacity: capacity)
        positions.initialize(repeating: -1, count: capacity)
        deadlines = .allocate(capacity: capacity)
        deadlines.initialize(repeating: .max, count: capacity)
    }

    deinit {
        heap.deallocate()
        positions.deallocate()
        deadlines.deallocate()
    }

    /// The stream's deadline, `.max` for none.
    func deadline(of index: Int) -> UInt64 { deadlines[index] }

    /// The earliest deadline, `.max` for none.
    var earliest: UInt64 { count == 0 ? .max : deadlines[Int(heap[0])] }

    /// Sets (or, with `.max`, removes) the deadline of stream `index`.
    func set(_ index: Int, _ deadline: UInt64) {
        let position = Int(positions[index])
        deadlines[index] = deadline
        if deadline == .max {
            if position >= 0 { remove(at: position) }
        } else if position < 0 {
            heap[count] = Int32(index)
            positions[index] = Int32(count)
            count += 1
            siftUp(count - 1)
        } else {
            siftDown(siftUp(position))
        }
    }

    /// The stream whose deadline is `now` or before, earliest first, taken out; nil when none.
    func popDue(now: UInt64) -> Int? {
        guard count > 0, deadlines[Int(heap[0])] <= now else { return nil }
        let index = Int(heap[0])
        set(index, .max)
        return index
    }

    private func remove(at position: Int) {
        let index = Int(heap[position])
        positions[index] = -1
        count -= 1
        guard position < count else { return }
        heap[position] = heap[count]
        positions[Int(heap[position])] = Int32(position)
        siftDown(siftUp(position))
    }

    private func earlier(_ first: Int, _ second: Int) -> Bool {
        deadlines[Int(heap[first])] < deadlines[Int(heap[second])]
    }

    private func swapAt(_ first: Int, _ second: Int) {
        let held = heap[first]
        heap[first] = heap[second]
        heap[second] = held
        positions[Int(heap[first])] = Int32(first)
        positions[Int(heap[second])] = Int32(second)
    }

    /// Returns where the entry ended up.
    @discardableResult
    private func siftUp(_ start: Int) -> Int {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard earlier(child, parent) else { break }
            swapAt(child, parent)
            child = parent
        }
        return child
    }

    private func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < count else { return }
            let right = left + 1
            let smaller = right < count && earlier(right, left) ? right : left
            guard earlier(smaller, parent) else { return }
            swapAt(parent, smaller)
            parent = smaller
        }
    }
}
