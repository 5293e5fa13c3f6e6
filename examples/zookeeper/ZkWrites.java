// ZkWrites - a ZooKeeper write load for the benchmarks (tools/scripts/bench.sh).
//
//   java -cp /usr/share/java/zookeeper.jar:DIR ZkWrites HOST:PORT SECONDS [CLIENTS]
//
// CLIENTS sessions (default 1), each in its own thread, each doing
// synchronous setData calls of 512 bytes on its own znode, back to back,
// for SECONDS. Every acknowledged setData is one transaction the server
// wrote to its log and synced (forceSync=yes) before answering. Prints
// "result: writes_per_sec=N writes=N".
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

public class ZkWrites {
	public static void main(String[] args) throws Exception {
		String connect = args[0];
		double seconds = Double.parseDouble(args[1]);
		int clients = args.length > 2 ? Integer.parseInt(args[2]) : 1;
		AtomicLong writes = new AtomicLong();
		byte[] data = new byte[512];
		Thread[] threads = new Thread[clients];
		long[] window = new long[2];
		CountDownLatch ready = new CountDownLatch(clients), go = new CountDownLatch(1);
		for (int c = 0; c < clients; c++) {
			final String node = "/zkwrites-" + c;
			threads[c] = new Thread(() -> {
				try {
					CountDownLatch up = new CountDownLatch(1);
					ZooKeeper zk = new ZooKeeper(connect, 30000, e -> {
						if (e.getState() == Watcher.Event.KeeperState.SyncConnected)
							up.countDown();
					});
					if (!up.await(30, TimeUnit.SECONDS))
						throw new RuntimeException("no session");
					if (zk.exists(node, false) == null)
						zk.create(node, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
					ready.countDown();
					go.await();
					long end = window[1];
					while (System.nanoTime() < end) {
						zk.setData(node, data, -1);
						writes.incrementAndGet();
					}
					zk.close();
				} catch (Exception e) {
					e.printStackTrace();
					System.exit(1);
				}
			});
			threads[c].start();
		}
		ready.await();
		window[0] = System.nanoTime();
		window[1] = window[0] + (long) (seconds * 1e9);
		go.countDown();
		for (Thread t : threads)
			t.join();
		double took = (System.nanoTime() - window[0]) / 1e9;
		System.out.printf("result: writes_per_sec=%.1f writes=%d%n", writes.get() / took, writes.get());
	}
}
