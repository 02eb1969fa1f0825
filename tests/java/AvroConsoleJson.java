// What kafka-avro-console-consumer prints for Avro values, for the tests to compare kafkafmt's text with.
//
// Confluent's AvroMessageFormatter deserializes a value to a generic Avro object (no logical-type
// conversions) and prints it with AvroSchemaUtils.toJson: the schema of the object (a primitive's for
// a primitive, so a top-level union prints as its branch) and Avro's JsonEncoder. This does the same
// with Avro's own Java classes (run with Avro, Jackson and SLF4J on the class path, e.g. PySpark's jars):
//
//   java -cp JARS AvroConsoleJson.java WRITER.avsc < values.hex     one hex-encoded Avro body per line
//   java AvroConsoleJson.java --numbers < bits.hex                  Double.toString and Float.toString of
//                                                                   64-bit patterns (low 32 bits: the float)
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;

public class AvroConsoleJson {
  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
    PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
    if (args[0].equals("--numbers")) {
      for (String line; (line = in.readLine()) != null; ) {
        long bits = Long.parseUnsignedLong(line.trim(), 16);
        out.println(Double.toString(Double.longBitsToDouble(bits)) + " " + Float.toString(Float.intBitsToFloat((int) bits)));
      }
    } else {
      Avro.print(new String(Files.readAllBytes(Paths.get(args[0])), StandardCharsets.UTF_8), in, out);
    }
    out.flush();
  }
}

class Avro {
  static org.apache.avro.Schema schemaOf(Object v) {
    org.apache.avro.Schema.Type t;
    if (v == null) t = org.apache.avro.Schema.Type.NULL;
    else if (v instanceof Boolean) t = org.apache.avro.Schema.Type.BOOLEAN;
    else if (v instanceof Integer) t = org.apache.avro.Schema.Type.INT;
    else if (v instanceof Long) t = org.apache.avro.Schema.Type.LONG;
    else if (v instanceof Float) t = org.apache.avro.Schema.Type.FLOAT;
    else if (v instanceof Double) t = org.apache.avro.Schema.Type.DOUBLE;
    else if (v instanceof CharSequence) t = org.apache.avro.Schema.Type.STRING;
    else if (v instanceof ByteBuffer) t = org.apache.avro.Schema.Type.BYTES;
    else return ((org.apache.avro.generic.GenericContainer) v).getSchema();
    return org.apache.avro.Schema.create(t);
  }

  static void print(String schemaText, BufferedReader in, PrintStream out) throws IOException {
    org.apache.avro.Schema writer = new org.apache.avro.Schema.Parser().parse(schemaText);
    org.apache.avro.generic.GenericData data = new org.apache.avro.generic.GenericData();
    org.apache.avro.generic.GenericDatumReader<Object> reader =
        new org.apache.avro.generic.GenericDatumReader<>(writer, writer, data);
    for (String line; (line = in.readLine()) != null; ) {
      byte[] b = new byte[line.length() / 2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
      Object v = reader.read(null, org.apache.avro.io.DecoderFactory.get().binaryDecoder(b, null));
      org.apache.avro.Schema s = schemaOf(v);
      ByteArrayOutputStream buf = new ByteArrayOutputStream();
      org.apache.avro.io.JsonEncoder enc = org.apache.avro.io.EncoderFactory.get().jsonEncoder(s, buf);
      new org.apache.avro.generic.GenericDatumWriter<Object>(s, data).write(v, enc);
      enc.flush();
      out.write(buf.toByteArray());
      out.write('\n');
    }
  }
}
