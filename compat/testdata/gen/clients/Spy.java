// Spy routes keys with the real spymemcached, for chash's compat tests.
//
// usage: java -cp spymemcached.jar:. Spy [-weighted] HOST:PORT:WEIGHT... <keys
//
// It connects a MemcachedClient built by KetamaConnectionFactory (KETAMA_HASH, the
// spymemcached node key format) to the servers — with -weighted, passing their
// weights, which turns on spymemcached's weighted ketama — and for every key on stdin
// (UTF-8, one per line) stores the key (value = key) and prints the address of
// getNodeLocator().getPrimary(key) as host:port; the caller checks that the key
// landed there.
//
// Build: javac -cp /usr/share/java/spymemcached.jar Spy.java
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import net.spy.memcached.DefaultConnectionFactory;
import net.spy.memcached.DefaultHashAlgorithm;
import net.spy.memcached.KetamaConnectionFactory;
import net.spy.memcached.KetamaNodeKeyFormatter;
import net.spy.memcached.MemcachedClient;

public class Spy {
	public static void main(String[] args) throws Exception {
		boolean weighted = false;
		List<InetSocketAddress> addrs = new ArrayList<>();
		Map<InetSocketAddress, Integer> weights = new LinkedHashMap<>();
		for (String a : args) {
			if (a.equals("-weighted")) {
				weighted = true;
				continue;
			}
			int w = a.lastIndexOf(':');
			int p = a.lastIndexOf(':', w - 1);
			InetSocketAddress addr = new InetSocketAddress(a.substring(0, p), Integer.parseInt(a.substring(p + 1, w)));
			addrs.add(addr);
			weights.put(addr, Integer.parseInt(a.substring(w + 1)));
		}
		KetamaConnectionFactory f = weighted
			? new KetamaConnectionFactory(DefaultConnectionFactory.DEFAULT_OP_QUEUE_LEN,
				DefaultConnectionFactory.DEFAULT_READ_BUFFER_SIZE,
				DefaultConnectionFactory.DEFAULT_OP_QUEUE_MAX_BLOCK_TIME,
				DefaultHashAlgorithm.KETAMA_HASH, KetamaNodeKeyFormatter.Format.SPYMEMCACHED, weights)
			: new KetamaConnectionFactory();
		MemcachedClient c = new MemcachedClient(f, addrs);
		PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
		BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
		List<Future<Boolean>> sets = new ArrayList<>();
		for (String key; (key = in.readLine()) != null; ) {
			InetSocketAddress a = (InetSocketAddress) c.getNodeLocator().getPrimary(key).getSocketAddress();
			out.println(a.getAddress().getHostAddress() + ":" + a.getPort());
			sets.add(c.set(key, 0, key));
		}
		for (Future<Boolean> s : sets) {
			if (!s.get(20, TimeUnit.SECONDS)) {
				throw new IllegalStateException("set failed");
			}
		}
		out.flush();
		c.shutdown(5, TimeUnit.SECONDS);
	}
}
