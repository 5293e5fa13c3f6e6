/*
 * AmqLoad - persistent JMS sends to an ActiveMQ broker, and the consumer
 * that drains them back (the benchmark's services section and the
 * activemq power-cut campaign).
 *
 *   java -cp CP AmqLoad produce URL QUEUE THREADS SECONDS [ACKS]
 *   java -cp CP AmqLoad consume URL QUEUE IDLE_MS
 *
 * produce: THREADS producers, each with its own connection and session,
 * send persistent 1 KiB messages for SECONDS. A persistent send outside a
 * transaction returns once the broker stored the message (KahaDB's
 * journal synced it): that return is the acknowledgement. Each message
 * carries a long property "id", unique across the threads; with ACKS,
 * after each send returned, one line "acked ID EPOCH_SECONDS" (the wall
 * clock, microseconds) is appended to ACKS in one write. Prints
 * "result: msgs_per_sec=... sent=... seconds=... threads=...".
 *
 * consume: receives from QUEUE until nothing came for IDLE_MS (the first
 * message may take up to 30 s: the broker may be recovering its store),
 * and prints each message's id, one per line, then on stderr
 * "result: consumed=N".
 */
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import javax.jms.BytesMessage;
import javax.jms.Connection;
import javax.jms.DeliveryMode;
import javax.jms.JMSException;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import org.apache.activemq.ActiveMQConnectionFactory;

public class AmqLoad {
	static final int MESSAGE_BYTES = 1024;

	public static void main(String[] args) throws Exception {
		if (args.length >= 5 && args[0].equals("produce")) {
			produce(args[1], args[2], Integer.parseInt(args[3]), Double.parseDouble(args[4]),
				args.length > 5 ? args[5] : null);
		} else if (args.length == 4 && args[0].equals("consume")) {
			consume(args[1], args[2], Long.parseLong(args[3]));
		} else {
			System.err.println("usage: AmqLoad produce URL QUEUE THREADS SECONDS [ACKS]\n"
				+ "       AmqLoad consume URL QUEUE IDLE_MS");
			System.exit(2);
		}
	}

	static void produce(String url, String queue, int threads, double seconds, String acksPath)
		throws Exception {
		ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
		FileOutputStream acks = acksPath == null ? null : new FileOutputStream(acksPath, true);
		AtomicLong nextId = new AtomicLong();
		AtomicLong sent = new AtomicLong();
		CountDownLatch connected = new CountDownLatch(threads), go = new CountDownLatch(1);
		long[] window = new long[2]; /* start and end, ns: set once every thread connected */
		Thread[] workers = new Thread[threads];
		Throwable[] failure = new Throwable[1];
		for (int t = 0; t < threads; t++) {
			workers[t] = new Thread(() -> {
				Connection c = null;
				try {
					c = factory.createConnection();
					c.start();
					Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
					MessageProducer p = s.createProducer(s.createQueue(queue));
					p.setDeliveryMode(DeliveryMode.PERSISTENT);
					byte[] body = new byte[MESSAGE_BYTES];
					connected.countDown();
					go.await();
					long end;
					synchronized (window) {
						end = window[1];
					}
					while (System.nanoTime() < end) {
						long id = nextId.incrementAndGet();
						BytesMessage m = s.createBytesMessage();
						m.setLongProperty("id", id);
						m.writeBytes(body);
						p.send(m);
						sent.incrementAndGet();
						if (acks != null)
							ack(acks, id);
					}
				} catch (Throwable e) {
					synchronized (failure) {
						if (failure[0] == null)
							failure[0] = e;
					}
					connected.countDown();
				} finally {
					close(c);
				}
			});
			workers[t].start();
		}
		/* the clock starts once every producer is connected */
		connected.await();
		synchronized (window) {
			window[0] = System.nanoTime();
			window[1] = window[0] + (long)(seconds * 1e9);
		}
		go.countDown();
		for (Thread w : workers)
			w.join();
		double secs = (System.nanoTime() - window[0]) / 1e9;
		if (failure[0] != null) {
			System.err.println("AmqLoad: a producer failed: " + failure[0]);
			System.exit(1);
		}
		System.out.printf("result: msgs_per_sec=%.1f sent=%d seconds=%.3f threads=%d%n", sent.get() / secs,
			sent.get(), secs, threads);
		System.exit(0);
	}

	/* One line, one write(): the lines of the threads never interleave. */
	static void ack(FileOutputStream acks, long id) throws IOException {
		Instant now = Instant.now();
		String line = String.format("acked %d %d.%06d%n", id, now.getEpochSecond(), now.getNano() / 1000);
		acks.write(line.getBytes(StandardCharsets.US_ASCII));
	}

	static void close(Connection c) {
		try {
			if (c != null)
				c.close();
		} catch (JMSException e) {
			/* the run's figure or ids are what matter; a failed close changes neither */
		}
	}

	static void consume(String url, String queue, long idleMs) throws JMSException {
		ActiveMQConnectionFactory factory = new ActiveMQConnectionFactory(url);
		long n = 0;
		StringBuilder out = new StringBuilder();
		Connection c = factory.createConnection();
		try {
			c.start();
			Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
			MessageConsumer consumer = s.createConsumer(s.createQueue(queue));
			Message m;
			while ((m = consumer.receive(n == 0 ? Math.max(idleMs, 30000) : idleMs)) != null) {
				out.append(m.getLongProperty("id")).append('\n');
				n++;
			}
		} finally {
			close(c);
		}
		System.out.print(out);
		System.out.flush();
		System.err.println("result: consumed=" + n);
		System.exit(0);
	}
}
