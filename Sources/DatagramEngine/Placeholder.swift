public enum DatagramEnginePlaceholder {}
