package dev.statectl.twin;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.ObjectWriter;
import java.io.IOException;
import java.util.List;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/** JSON serdes for the model (Jackson data binding); a null value stays null (a tombstone). */
final class JsonSerdes {
  private static final ObjectMapper MAPPER =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  private JsonSerdes() {}

  static <T> Serde<T> of(Class<T> type) {
    return serde(MAPPER.readerFor(type), MAPPER.writerFor(type));
  }

  /** A game's high scores as a JSON array of entries, best first: what statectl writes too. */
  static Serde<Model.TopScores> topScores() {
    Serde<List<Model.Entry>> list =
        serde(
            MAPPER.readerFor(new TypeReference<List<Model.Entry>>() {}),
            MAPPER.writerFor(new TypeReference<List<Model.Entry>>() {}));
    Serializer<Model.TopScores> ser =
        (topic, top) -> top == null ? null : list.serializer().serialize(topic, top.toList());
    Deserializer<Model.TopScores> de =
        (topic, bytes) -> {
          List<Model.Entry> entries = list.deserializer().deserialize(topic, bytes);
          return entries == null ? null : Model.TopScores.of(entries);
        };
    return Serdes.serdeFrom(ser, de);
  }

  private static <T> Serde<T> serde(ObjectReader reader, ObjectWriter writer) {
    Serializer<T> ser =
        (topic, value) -> {
          if (value == null) {
            return null;
          }
          try {
            return writer.writeValueAsBytes(value);
          } catch (IOException e) {
            throw new SerializationException("cannot write JSON for " + topic, e);
          }
        };
    Deserializer<T> de =
        (topic, bytes) -> {
          if (bytes == null) {
            return null;
          }
          try {
            return reader.readValue(bytes);
          } catch (IOException e) {
            throw new SerializationException("not the JSON expected in " + topic, e);
          }
        };
    return Serdes.serdeFrom(ser, de);
  }
}
